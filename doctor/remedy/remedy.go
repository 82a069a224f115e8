// Package remedy builds every command the doctor prints or `doctor --fix` runs: the AppArmor
// profile, the sysctl drop-in, the setuid removal, the install. Printed remedies and applied
// fixes come from the same functions here, so what a user pastes writes what --fix owns.
package remedy

import "strings"

// Kind names an automatable remedy.
type Kind string

const (
	Install      Kind = "install"          // run `bwrapkit install`
	AppArmor     Kind = "apparmor-profile" // write File with Content, then run Commands (root)
	Sysctl       Kind = "sysctl"           // run Commands and persist in File (root)
	RemoveSetuid Kind = "remove-setuid"    // chmod u-s Bwrap (root)
)

// Fix carries the facts a fixer needs; Commands are the same steps as shell commands, for
// printing when the fixer lacks the rights to apply them.
type Fix struct {
	Kind     Kind
	Bwrap    string   // the bwrap the fix is for
	File     string   // a file to write (AppArmor profile, sysctl.d drop-in)
	Content  string   // that file's content
	Commands []string // the steps as commands for this host, sudo included where needed
}

// InstallCommand is the command that installs bwrapkit's pinned, verified bwrap.
const InstallCommand = "bwrapkit install"

// InstallFix is the install remedy for (replacing) bwrap, which may be "".
func InstallFix(bwrap string) *Fix {
	return &Fix{Kind: Install, Bwrap: bwrap, Commands: []string{InstallCommand}}
}

// Sudo is the prefix a command needs: none for root.
func Sudo(root bool) string {
	if root {
		return ""
	}
	return "sudo "
}

// RemoveSetuidCommand drops the setuid bit of bwrap.
func RemoveSetuidCommand(sudo, bwrap string) string {
	return sudo + "chmod u-s " + Quote(bwrap)
}

// RemoveSetuidFix is the remedy for a setuid bwrap.
func RemoveSetuidFix(sudo, bwrap string) *Fix {
	return &Fix{Kind: RemoveSetuid, Bwrap: bwrap, Commands: []string{RemoveSetuidCommand(sudo, bwrap)}}
}

// PrintfCommand prints text line by line, each line quoted for a POSIX shell. printf rather
// than a here-document: the command still works when pasted indented.
func PrintfCommand(text string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	quoted := make([]string, len(lines))
	for i, line := range lines {
		quoted[i] = "'" + strings.ReplaceAll(line, "'", `'\''`) + "'"
	}
	return "printf '%s\\n' " + strings.Join(quoted, " ")
}

// WriteFileCommand writes content to file through tee (so sudo applies to the write).
func WriteFileCommand(sudo, file, content string) string {
	return PrintfCommand(content) + " | " + sudo + "tee " + Quote(file) + " >/dev/null"
}

// Quote quotes a word for a POSIX shell only when it needs it.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
