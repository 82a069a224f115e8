package remedy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// AppArmorProfile is the profile `doctor --fix` writes so that one bwrap may create user
// namespaces under Ubuntu's kernel.apparmor_restrict_unprivileged_userns.
type AppArmorProfile struct {
	Name    string // the profile's name and file name: "bwrapkit-usr.bin.bwrap"
	File    string // where it goes on the host: /etc/apparmor.d/<Name>
	Content string
}

// appArmorMark starts the first line of every profile we write: a file without it is
// someone else's and is never overwritten.
const appArmorMark = "# Written by bwrapkit doctor --fix for "

// maxProfileName keeps the file name well under NAME_MAX (255) for long install paths.
const maxProfileName = 200

// NewAppArmorProfile is the profile for bwrapPath, which must be absolute, clean and
// symlink-resolved: AppArmor attaches a profile to the path the kernel executes. It
// refuses a path AppArmor could only match as a pattern (see appArmorAttachment).
func NewAppArmorProfile(bwrapPath string) (AppArmorProfile, error) {
	attachment, err := appArmorAttachment(bwrapPath)
	if err != nil {
		return AppArmorProfile{}, err
	}
	name := "bwrapkit-" + strings.Map(func(r rune) rune {
		switch {
		case r == '/':
			return '.'
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, strings.TrimPrefix(bwrapPath, "/"))
	if len(name) > maxProfileName {
		// Cut, and keep the name unique with a hash of the whole path.
		sum := sha256.Sum256([]byte(bwrapPath))
		name = name[:maxProfileName-13] + "-" + hex.EncodeToString(sum[:])[:12]
	}
	file := "/etc/apparmor.d/" + name
	content := fmt.Sprintf(`%s%s
# Undo: apparmor_parser -R %s && rm %s
abi <abi/4.0>,
include <tunables/global>

profile %s %s flags=(unconfined) {
  userns,

  # Site-specific additions and overrides.
  include if exists <local/%s>
}
`, appArmorMark, bwrapPath, file, file, name, attachment, name)
	return AppArmorProfile{Name: name, File: file, Content: content}, nil
}

// Commands write and load the profile as shell commands, for printing.
func (p AppArmorProfile) Commands(sudo string) []string {
	return []string{
		WriteFileCommand(sudo, p.File, p.Content),
		sudo + "apparmor_parser -r " + Quote(p.File),
	}
}

// Fix is the apparmor-profile remedy that writes and loads p.
func (p AppArmorProfile) Fix(sudo string) *Fix {
	return &Fix{Kind: AppArmor, Bwrap: p.bwrap(), File: p.File, Content: p.Content, Commands: p.Commands(sudo)}
}

// appArmorAttachment writes bwrapPath as an exact AppArmor attachment. AppArmor's lexer
// ends an unquoted path at a blank, '"', '!' or ',' (and '#' starts a comment), so any path
// beyond plain characters is double-quoted; inside quotes only '"' and '\' would need a
// backslash. The attachment is a pattern (AARE): * ? [ ] { } ^ are globs, @{...} a
// variable, so a path holding them would match other paths or need escapes that the
// doctor's own profile search does not read; such paths, control characters and invalid
// UTF-8 are refused instead of being written as a wider grant than asked for.
func appArmorAttachment(bwrapPath string) (string, error) {
	switch {
	case !path.IsAbs(bwrapPath) || path.Clean(bwrapPath) != bwrapPath:
		return "", fmt.Errorf("%q is not an absolute, clean path", bwrapPath)
	case !utf8.ValidString(bwrapPath):
		return "", fmt.Errorf("%q is not valid UTF-8, which AppArmor policy cannot name", bwrapPath)
	}
	for _, r := range bwrapPath {
		if r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("%q holds a control character, which an AppArmor profile cannot name", bwrapPath)
		}
		if strings.ContainsRune(`"\*?[]{}^`, r) {
			return "", fmt.Errorf("%q holds %q, which AppArmor reads as a pattern or an escape: "+
				"move bwrap to a plain path (e.g. bwrapkit install --home /opt/bwrapkit)", bwrapPath, r)
		}
	}
	if strings.Trim(bwrapPath, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._+-") == "" {
		return bwrapPath, nil
	}
	return `"` + bwrapPath + `"`, nil
}

// appArmorProfileOwner says for which bwrap path we wrote an existing profile file; ok is
// false when the file is not ours.
func appArmorProfileOwner(existing string) (bwrapPath string, ok bool) {
	first, _, _ := strings.Cut(existing, "\n")
	return strings.CutPrefix(first, appArmorMark)
}

// CheckExisting decides whether the profile may replace the file already at its place
// (existing is that file's content): only if we wrote it, for the same bwrap.
func (p AppArmorProfile) CheckExisting(existing string) error {
	owner, ours := appArmorProfileOwner(existing)
	switch {
	case !ours:
		return fmt.Errorf("%s exists and was not written by bwrapkit (its first line is not %q): left alone", p.File, strings.TrimSpace(appArmorMark)+" ...")
	case owner != p.bwrap():
		return fmt.Errorf("%s was written by bwrapkit for another bwrap, %s: left alone", p.File, owner)
	}
	return nil
}

// bwrap is the path the profile was made for, from its first line.
func (p AppArmorProfile) bwrap() string {
	owner, _ := appArmorProfileOwner(p.Content)
	return owner
}
