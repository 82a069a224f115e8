// Package provenance says which distribution package owns a file and at what version, by
// asking the host's package manager (dpkg, rpm, apk, pacman): read-only queries, each
// bounded in time and output, stdin the null device. Distributions backport security fixes
// without changing the upstream version, so the package version is what a user looks up.
package provenance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/capped"
)

// Package is the owner of a file.
type Package struct {
	Manager string `json:"manager"` // dpkg, rpm, apk, pacman
	Name    string `json:"name"`
	Version string `json:"version"` // as the manager prints it: 0.8.0-2+deb12u1
}

func (p Package) String() string {
	return fmt.Sprintf("%s %s (%s)", p.Name, p.Version, p.Manager)
}

// Runner runs a read-only query and returns its stdout; Run is the real one.
type Runner func(ctx context.Context, name string, args ...string) (string, error)

// manager is one package manager: the tool to look for, how to ask for a file's owner,
// and how to read the answer.
type manager struct {
	name, tool string
	// listed finds the owner in the manager's own file lists without its (slow) search,
	// for the package names bwrap ships in; ok is false when that does not settle it.
	listed func(path string) (name string, ok bool)
	owner  func(path string) []string
	parse  func(out, path string) (Package, error)
	// version asks for the owner's version when the owner query does not say it.
	version func(name string) []string
}

func managers() []manager {
	return []manager{
		{name: "dpkg", tool: "dpkg-query", listed: func(p string) (string, bool) { return dpkgListed(dpkgInfoDir, p, bwrapPackages()) }, owner: func(p string) []string { return []string{"-S", p} }, parse: parseDpkgOwner,
			version: func(n string) []string { return []string{"-W", "-f=${Version}\n", n} }},
		{name: "rpm", tool: "rpm", owner: func(p string) []string { return []string{"-qf", "--qf", "%{NAME}\t%{VERSION}-%{RELEASE}\n", p} }, parse: parseRPMOwner},
		{name: "apk", tool: "apk", owner: func(p string) []string { return []string{"info", "--who-owns", p} }, parse: parseAPKOwner},
		{name: "pacman", tool: "pacman", owner: func(p string) []string { return []string{"-Qo", p} }, parse: parsePacmanOwner},
	}
}

// NotOwnedError: the manager answered, and no package owns the file (a bwrap installed by
// hand or by bwrapkit).
type NotOwnedError struct{ Path string }

func (e *NotOwnedError) Error() string { return e.Path + " belongs to no installed package" }

// Owner asks each package manager present (found by lookPath) who owns path; the first
// that answers decides. path should be symlink-resolved; on a merged-/usr system the
// package may list /bin/X for /usr/bin/X, so both are asked. With no manager on the host,
// or none that owns the file, the error is a *NotOwnedError; a query that hangs or answers
// nonsense is an error saying which and why.
func Owner(ctx context.Context, path string, lookPath func(string) (string, error), run Runner) (Package, error) {
	if !Packageable(path) {
		// Asking would cost a full database read (`dpkg-query -S` alone is ~50 ms of CPU,
		// more than the rest of a doctor) for an answer known in advance.
		return Package{}, &NotOwnedError{Path: path}
	}
	var failures []string
	for _, m := range managers() {
		tool, err := lookPath(m.tool)
		if err != nil {
			continue
		}
		for _, candidate := range aliases(path) {
			if m.listed != nil {
				if name, ok := m.listed(candidate); ok {
					pkg := Package{Manager: m.name, Name: name}
					if version, ok := dpkgStatusVersion(dpkgStatusFile, name); ok {
						pkg.Version = version
					}
					return withVersion(ctx, run, tool, m, pkg, candidate)
				}
			}
			out, err := run(ctx, tool, m.owner(candidate)...)
			if err != nil && out == "" {
				if isNotOwned(err) {
					continue
				}
				// A tool that hangs or breaks is not asked again about the other name.
				failures = append(failures, fmt.Sprintf("%s %s: %v", m.tool, strings.Join(m.owner(candidate), " "), err))
				break
			}
			pkg, err := m.parse(out, candidate)
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s: %v", m.tool, err))
				break
			}
			return withVersion(ctx, run, tool, m, pkg, candidate)
		}
	}
	if len(failures) > 0 {
		return Package{}, errors.New(strings.Join(failures, "; "))
	}
	return Package{}, &NotOwnedError{Path: path}
}

// packageTrees are where distribution packages install files (the FHS system trees and
// /opt's add-on packages). The managed install, a home directory, /usr/local (the local
// administrator's, by the FHS and every distribution's policy), /srv, /tmp and /var
// (but for the trees below it packages use) are never a package's.
var packageTrees = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc", "/var/lib", "/var/cache"}

// Packageable reports whether a package manager could own path (absolute, resolved):
// elsewhere the doctor does not ask one.
func Packageable(path string) bool {
	path = filepath.Clean(path)
	if path == "/usr/local" || strings.HasPrefix(path, "/usr/local/") {
		return false
	}
	for _, tree := range packageTrees {
		if path == tree || strings.HasPrefix(path, tree+"/") {
			return true
		}
	}
	return false
}

// withVersion asks for the owner's version where the owner query did not give it.
func withVersion(ctx context.Context, run Runner, tool string, m manager, pkg Package, path string) (Package, error) {
	if pkg.Version != "" || m.version == nil {
		return pkg, nil
	}
	out, err := run(ctx, tool, m.version(pkg.Name)...)
	version := strings.TrimSpace(out)
	if err != nil || !validVersion(version) {
		return pkg, fmt.Errorf("%s owns %s, but %s gave no version (%q, %v)", pkg.Name, path, m.tool, firstLine(out), err)
	}
	pkg.Version = version
	return pkg, nil
}

// dpkgInfoDir holds dpkg's per-package file lists (<package>[:<arch>].list).
const dpkgInfoDir = "/var/lib/dpkg/info"

// dpkgStatusFile is dpkg's record of the installed packages and their versions.
const dpkgStatusFile = "/var/lib/dpkg/status"

// dpkgStatusVersion reads an installed package's version from dpkg's status file, the record
// `dpkg-query -W` reads, without the 5 ms of CPU that loading its whole database costs.
func dpkgStatusVersion(statusFile, name string) (string, bool) {
	data, err := os.ReadFile(statusFile)
	if err != nil {
		return "", false
	}
	// Searched as bytes: the file is hundreds of kilobytes, and a copy into a string
	// would cost more than the search.
	header := []byte("Package: " + name + "\n")
	for rest := data; ; {
		at := bytes.Index(rest, header)
		if at < 0 {
			return "", false
		}
		if at > 0 && rest[at-1] != '\n' {
			rest = rest[at+len(header):]
			continue
		}
		paragraph := rest[at:]
		if end := bytes.Index(paragraph, []byte("\n\n")); end >= 0 {
			paragraph = paragraph[:end]
		}
		rest = rest[at+len(header):]
		fields := map[string]string{}
		for _, line := range strings.Split(string(paragraph), "\n") {
			if key, value, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, " ") {
				fields[key] = strings.TrimSpace(value)
			}
		}
		if strings.HasSuffix(fields["Status"], " installed") && validVersion(fields["Version"]) {
			return fields["Version"], true
		}
	}
}

// bwrapPackages are the names distributions ship bwrap in.
func bwrapPackages() []string { return []string{"bubblewrap"} }

// dpkgListed looks for path in the file lists of the named packages: dpkg's own record, read
// in a millisecond, where `dpkg-query -S` reads every package's list (tens of milliseconds
// of CPU). A path in none of them is left to dpkg-query -S.
func dpkgListed(infoDir, path string, names []string) (string, bool) {
	for _, name := range names {
		if listHas(filepath.Join(infoDir, name+".list"), path) {
			return name, true
		}
		// A Multi-Arch package's list is <name>:<arch>.list; the glob reads the whole
		// directory (thousands of names: a millisecond), so only when the plain list misses.
		lists, _ := filepath.Glob(filepath.Join(infoDir, name+":*.list"))
		for _, list := range lists {
			if listHas(list, path) {
				return name, true
			}
		}
	}
	return "", false
}

// listHas reports whether a dpkg file list holds path as one of its lines.
func listHas(list, path string) bool {
	data, err := os.ReadFile(list)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line == path {
			return true
		}
	}
	return false
}

// isNotOwned: the tool exited 1, its usual answer for "no package owns this".
func isNotOwned(err error) bool {
	var exit *exec.ExitError
	return errors.As(err, &exit) && exit.ExitCode() == 1
}

func aliases(path string) []string {
	paths := []string{path}
	for _, dir := range []string{"/usr/bin/", "/usr/sbin/", "/usr/lib/"} {
		if rest, ok := strings.CutPrefix(path, dir); ok {
			paths = append(paths, filepath.Join("/", strings.TrimPrefix(dir, "/usr/"), rest))
		}
	}
	return paths
}

// parseDpkgOwner reads `dpkg-query -S PATH`: "bubblewrap: /usr/bin/bwrap", or
// "bubblewrap:amd64: /usr/bin/bwrap" (multi-arch), skipping "diversion by" lines.
func parseDpkgOwner(out, path string) (Package, error) {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "diversion ") {
			continue
		}
		owner, file, ok := strings.Cut(line, ": ")
		if !ok || strings.TrimSpace(file) != path {
			continue
		}
		name, _, _ := strings.Cut(owner, ":")
		if !validName(name) || strings.Contains(owner, ",") {
			return Package{}, fmt.Errorf("dpkg-query -S said %q, which names no single package", line)
		}
		return Package{Manager: "dpkg", Name: name}, nil
	}
	return Package{}, fmt.Errorf("dpkg-query -S said %q, not who owns %s", firstLine(out), path)
}

// parseRPMOwner reads the --qf "%{NAME}\t%{VERSION}-%{RELEASE}" line.
func parseRPMOwner(out, path string) (Package, error) {
	name, version, ok := strings.Cut(strings.TrimSpace(out), "\t")
	if !ok || !validName(name) || !validVersion(version) {
		return Package{}, fmt.Errorf("rpm -qf said %q, not who owns %s", firstLine(out), path)
	}
	return Package{Manager: "rpm", Name: name, Version: version}, nil
}

// parseAPKOwner reads "/usr/bin/bwrap is owned by bubblewrap-0.8.0-r1".
func parseAPKOwner(out, path string) (Package, error) {
	owned, ok := strings.CutPrefix(strings.TrimSpace(out), path+" is owned by ")
	parts := strings.Split(owned, "-")
	if !ok || len(parts) < 3 || !strings.HasPrefix(parts[len(parts)-1], "r") {
		return Package{}, fmt.Errorf("apk info --who-owns said %q, not who owns %s", firstLine(out), path)
	}
	pkg := Package{Manager: "apk", Name: strings.Join(parts[:len(parts)-2], "-"), Version: parts[len(parts)-2] + "-" + parts[len(parts)-1]}
	if !validName(pkg.Name) || !validVersion(pkg.Version) {
		return Package{}, fmt.Errorf("apk info --who-owns said %q, not who owns %s", firstLine(out), path)
	}
	return pkg, nil
}

// parsePacmanOwner reads "/usr/bin/bwrap is owned by bubblewrap 0.8.0-1".
func parsePacmanOwner(out, path string) (Package, error) {
	owned, ok := strings.CutPrefix(strings.TrimSpace(out), path+" is owned by ")
	name, version, found := strings.Cut(owned, " ")
	if !ok || !found || !validName(name) || !validVersion(version) {
		return Package{}, fmt.Errorf("pacman -Qo said %q, not who owns %s", firstLine(out), path)
	}
	return Package{Manager: "pacman", Name: name, Version: version}, nil
}

// validName and validVersion keep a lying tool's output from reaching a report (or a
// command printed for a shell) as anything but a plain word.
func validName(name string) bool {
	return name != "" && len(name) <= 128 && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-._") == ""
}

func validVersion(version string) bool {
	return version != "" && len(version) <= 128 && (version[0] >= '0' && version[0] <= '9') &&
		strings.Trim(version, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-._~:") == ""
}

func firstLine(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	if len(line) > 200 {
		line = line[:200] + "..."
	}
	return line
}

// QueryTimeout bounds each query: a package database that is locked or on a dead mount
// must not hold the doctor.
const QueryTimeout = 3 * time.Second

// Run runs a query: stdin the null device, the C locale, at most QueryTimeout.
func Run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, QueryTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = []string{"LC_ALL=C", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	stdout, stderr := capped.NewHead(nil), capped.NewHead(nil) // bounded: a query may print without end
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", fmt.Errorf("gave no answer in time (at most %v): %w", QueryTimeout, ctx.Err())
	}
	if err != nil && stderr.Len() > 0 {
		err = fmt.Errorf("%w: %s", err, firstLine(stderr.String()))
	}
	return stdout.String(), err
}

// SystemLookPath finds a package manager's tool in the system directories only: the
// question is what the distribution installed, which a PATH shim should not answer.
func SystemLookPath(name string) (string, error) {
	for _, dir := range []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin"} {
		path := filepath.Join(dir, name)
		if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			return path, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}
