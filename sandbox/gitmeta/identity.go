package gitmeta

import (
	"bufio"
	"bytes"
	"path/filepath"
	"strings"

	"github.com/bwrapkit/bwrapkit/internal/environ"
	"github.com/bwrapkit/bwrapkit/internal/safefile"
)

// In commit mode the command commits as the caller: the caller's HOME (and its
// .gitconfig) is not inside, so git would stop at "Author identity unknown". The identity
// comes from the caller's GIT_AUTHOR_* / GIT_COMMITTER_* variables when set, else from
// user.name and user.email of the caller's global git config, read as a file (no git is
// run on the host for it), and is set inside as those four variables. Nothing else of the
// config goes in: it may hold credentials helpers and URLs with tokens.

const maxGitConfig = 256 << 10

// IdentityEnv is the identity to set inside for a commit-mode run.
func IdentityEnv(env []string) []string {
	getenv := environ.Getenv(env)
	name, email := globalGitUser(getenv)
	var out []string
	for _, role := range []string{"AUTHOR", "COMMITTER"} {
		for _, field := range []struct{ suffix, fallback string }{{"NAME", name}, {"EMAIL", email}} {
			variable := "GIT_" + role + "_" + field.suffix
			value := getenv(variable)
			if value == "" {
				value = field.fallback
			}
			if value != "" && !strings.ContainsAny(value, "\x00\n") {
				out = append(out, variable+"="+value)
			}
		}
	}
	return out
}

// globalGitUser reads user.name and user.email from $XDG_CONFIG_HOME/git/config (or
// ~/.config/git/config) and ~/.gitconfig, the later file winning, as git reads them.
func globalGitUser(getenv func(string) string) (name, email string) {
	var files []string
	config := getenv("XDG_CONFIG_HOME")
	home := getenv("HOME")
	if !filepath.IsAbs(config) && filepath.IsAbs(home) {
		config = filepath.Join(home, ".config")
	}
	if filepath.IsAbs(config) {
		files = append(files, filepath.Join(config, "git", "config"))
	}
	if filepath.IsAbs(home) {
		files = append(files, filepath.Join(home, ".gitconfig"))
	}
	for _, file := range files {
		data, err := safefile.ReadFile(file, maxGitConfig)
		if err != nil {
			continue
		}
		if n, e := parseGitUser(data); n != "" || e != "" {
			name, email = or(n, name), or(e, email)
		}
	}
	return name, email
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// parseGitUser is the pure half: the [user] section's name and email of a git config
// (simple values only; includes are not followed).
func parseGitUser(data []byte) (name, email string) {
	section := ""
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			section = strings.ToLower(strings.TrimSpace(strings.Trim(line, "[]")))
			continue
		}
		if section != "user" {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		value = strings.Trim(strings.TrimSpace(value), `"`)
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "name":
			name = value
		case "email":
			email = value
		}
	}
	return name, email
}
