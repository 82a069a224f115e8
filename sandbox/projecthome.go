package sandbox

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/bwrapkit/bwrapkit/home"
	"github.com/bwrapkit/bwrapkit/internal/environ"
)

// The policy's side of the project HOME (package home makes it and knows where it lives):
// the HOME a command gets when none can be made, what a HOME must keep apart from, the
// privileges that key it, and the caller's name the command sees.

// EphemeralHome is the command's HOME when no cache directory can hold a project's.
const EphemeralHome = "/tmp/home"

// fallbackReason is the HOME fallback said in words, for the user and the report.
func fallbackReason(e *home.Error) string {
	why := "no cache directory: neither XDG_CACHE_HOME nor an existing HOME"
	if len(e.Tried) > 0 {
		why = strings.Join(e.Tried, "; ")
	}
	return "no per-project HOME could be made (" + why + "); HOME is an empty " + EphemeralHome + " that ends with the run, so tools' caches start cold: set XDG_CACHE_HOME to a writable directory, or choose --home-dir DIR, to keep them"
}

// checkHome refuses a HOME the command must not have read-write: the rules of the
// workdir, and never inside the workdir or enclosing it (the project would carry the
// tools' state, or the HOME the project's protected .git).
func checkHome(field, given, home, workdir string, guard reachGuard) error {
	if err := refuseWritable(field, given, home, guard); err != nil {
		return err
	}
	if within(workdir, home) || within(home, workdir) {
		return &PolicyError{field, describe(given, home), fmt.Sprintf("encloses or lies inside the workdir %s; a HOME must be apart from the project", workdir)}
	}
	return nil
}

// callerName is the caller's user name for USER and LOGNAME: the user database's entry
// for this uid, else $USER, else the uid itself.
func callerName(env []string) string {
	if account, err := lookupUser(os.Geteuid()); err == nil && account != "" {
		return account
	}
	if name := environ.Getenv(env)("USER"); name != "" && !strings.ContainsAny(name, "\x00") {
		return name
	}
	return strconv.Itoa(os.Geteuid())
}

// privilegeKey describes what a request grants beyond the project: --net, the names
// --env and --pass-env set, --rw and --ro paths outside the workdir. "" for none.
func privilegeKey(request Request, workdir string, resolve resolver) string {
	var parts []string
	if request.Network {
		parts = append(parts, "net")
	}
	// Each host the proxy lets through is network a run without it lacks: a .npmrc a
	// no-network run planted must not steer a later run that reaches the registry.
	for _, host := range request.NetAllow {
		parts = append(parts, "net-allow="+strings.ToLower(host))
	}
	if request.Git == string(GitCommit) {
		parts = append(parts, "git=commit")
	}
	for _, entry := range request.Env {
		name, _, _ := strings.Cut(entry, "=")
		parts = append(parts, "env="+name)
	}
	for _, name := range request.PassEnv {
		parts = append(parts, "pass-env="+name)
	}
	for _, group := range []struct {
		flag  string
		paths []string
	}{{"rw", request.ReadWrite}, {"ro", request.ReadOnly}} {
		for _, path := range group.paths {
			real := resolve.existing(absolute(path))
			if !within(workdir, real) {
				parts = append(parts, group.flag+"="+real)
			}
		}
	}
	slices.Sort(parts)
	return strings.Join(slices.Compact(parts), "\x00")
}

// projectHome makes the workdir's HOME (home.Make) and refuses one the command must not
// have read-write.
func projectHome(env []string, workdir, privilege string, guard reachGuard) (string, error) {
	dir, err := home.Make(env, workdir, privilege)
	if err != nil {
		return "", err
	}
	if err := checkHome("HOME", dir, dir, workdir, guard); err != nil {
		return "", err
	}
	return dir, nil
}
