package doctor

import (
	"strings"

	"github.com/bwrapkit/bwrapkit/internal/version"
)

// SafeVersion is the first upstream release with a fix for every advisory below.
const SafeVersion = "0.12.0"

// Advisory is one security fix in bubblewrap's history (its release notes and CVE records).
type Advisory struct {
	CVE     string
	What    string
	FixedIn string
	// BackportedIn are older branches that got the fix: "0.6.3" covers 0.6.3 up to 0.7.0.
	BackportedIn []string
}

// Advisories lists the fixes a bwrap should have, oldest first (a fresh copy each call).
func Advisories() []Advisory {
	return []Advisory{
		{CVE: "CVE-2020-5291", What: "setuid privilege escalation", FixedIn: "0.4.1"},
		{CVE: "CVE-2024-42472", What: "Flatpak persist symlink escape (with --bind-fd)", FixedIn: "0.10.0", BackportedIn: []string{"0.6.3"}},
		{CVE: "CVE-2026-41163", What: "setuid + ptrace overlay mounts", FixedIn: "0.11.2"},
		{CVE: "CVE-2026-87766", What: "symlink via /oldroot writes host files during setup", FixedIn: "0.12.0"},
	}
}

// ParseVersion reads the version out of `bwrap --version`, which prints "bubblewrap X.Y.Z".
// Custom builds print anything ("bubblewrap built for Codex"); those give ok false.
func ParseVersion(build string) (version.Version, bool) {
	text := strings.TrimSpace(build)
	text = strings.TrimSpace(strings.TrimPrefix(text, "bubblewrap"))
	return version.Parse(text)
}

// Unfixed lists the advisories a given upstream version predates. Distributions backport
// fixes without changing the version, so this says "may be affected", never "is".
func Unfixed(v version.Version) []Advisory {
	var unfixed []Advisory
	for _, advisory := range Advisories() {
		if !v.Less(version.MustParse(advisory.FixedIn)) || backported(v, advisory) {
			continue
		}
		unfixed = append(unfixed, advisory)
	}
	return unfixed
}

// backported: a backport to X.Y.Z covers X.Y.Z and later releases of the X.Y branch.
func backported(v version.Version, advisory Advisory) bool {
	for _, fix := range advisory.BackportedIn {
		fixed := version.MustParse(fix)
		if v.Major == fixed.Major && v.Minor == fixed.Minor && !v.Less(fixed) {
			return true
		}
	}
	return false
}
