package doctor

import (
	"errors"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/doctor/provenance"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/internal/version"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		build string
		want  string // "" for unknown
	}{
		{"bubblewrap 0.8.0\n", "0.8.0"}, // Debian 12
		{"bubblewrap 0.12.0", "0.12.0"},
		{"bubblewrap 0.13.1", "0.13.1"},
		{"bubblewrap 0.11.0.1", ""},
		{"bubblewrap built for Codex", ""},
		{"bubblewrap built for Codex 2", ""},
		{"true (GNU coreutils) 9.1\nCopyright (C) 2022", ""}, // /bin/true as bwrap
		{"", ""},
		{"bubblewrap", ""},
		{"0.9.0", "0.9.0"},
	} {
		version, ok := ParseVersion(tc.build)
		got := ""
		if ok {
			got = version.String()
		}
		if got != tc.want {
			t.Errorf("ParseVersion(%q) = %q, want %q", tc.build, got, tc.want)
		}
	}
}

func TestUnfixed(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"0.4.0", "CVE-2020-5291 CVE-2024-42472 CVE-2026-41163 CVE-2026-87766"},
		{"0.6.2", "CVE-2024-42472 CVE-2026-41163 CVE-2026-87766"},
		{"0.6.3", "CVE-2026-41163 CVE-2026-87766"}, // the backport
		{"0.6.9", "CVE-2026-41163 CVE-2026-87766"},
		{"0.7.0", "CVE-2024-42472 CVE-2026-41163 CVE-2026-87766"},
		{"0.8.0", "CVE-2024-42472 CVE-2026-41163 CVE-2026-87766"},
		{"0.11.1", "CVE-2026-41163 CVE-2026-87766"},
		{"0.11.2", "CVE-2026-87766"},
		{"0.12.0", ""},
		{"0.13.1", ""},
	} {
		var cves []string
		for _, advisory := range Unfixed(version.MustParse(tc.version)) {
			cves = append(cves, advisory.CVE)
		}
		if got := strings.Join(cves, " "); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.version, got, tc.want)
		}
	}
}

func TestVersionVerdict(t *testing.T) {
	for _, tc := range []struct {
		build   string
		status  report.Status
		summary string
	}{
		{"bubblewrap 0.8.0", report.StatusWarn, "bubblewrap 0.8.0 predates 0.12.0: CVE-2024-42472, CVE-2026-41163, CVE-2026-87766"},
		{"bubblewrap 0.12.0", report.StatusOK, "bubblewrap 0.12.0"},
		{"bubblewrap built for Codex", report.StatusWarn, `version unknown: --version prints "bubblewrap built for Codex"`},
	} {
		check := versionVerdict(tc.build, nil, nil)
		if check.Status != tc.status || !strings.HasPrefix(check.Summary, tc.summary) {
			t.Errorf("%q: %s %q", tc.build, check.Status, check.Summary)
		}
		if check.Status == report.StatusWarn && !strings.Contains(check.Remedy, "bwrapkit install") {
			t.Errorf("%q: remedy %q", tc.build, check.Remedy)
		}
	}
	if check := versionVerdict("bubblewrap 0.8.0", nil, nil); !strings.Contains(check.Remedy, "backport") {
		t.Errorf("an old version must say distributions backport: %q", check.Remedy)
	}
}

// TestVersionVerdictNamesThePackage: the warning names the owning package and how to check
// that distribution's fixes; a binary no package owns is told so; a query that failed is in
// the detail and changes nothing else.
func TestVersionVerdictNamesThePackage(t *testing.T) {
	debian := &provenance.Package{Manager: "dpkg", Name: "bubblewrap", Version: "0.8.0-2+deb12u1"}
	check := versionVerdict("bubblewrap 0.8.0", debian, nil)
	if check.Status != report.StatusWarn || !strings.Contains(check.Summary, "package bubblewrap 0.8.0-2+deb12u1, dpkg") ||
		!strings.Contains(check.Remedy, "changelog.Debian.gz") || !strings.Contains(check.Remedy, "bubblewrap 0.8.0-2+deb12u1") {
		t.Errorf("dpkg: %+v", check)
	}
	if len(check.RemedyCommands) != 2 || !strings.HasPrefix(check.RemedyCommands[0], "zcat /usr/share/doc/bubblewrap/changelog.Debian.gz | grep -e CVE-2024-42472") {
		t.Errorf("dpkg commands: %q", check.RemedyCommands)
	}
	fedora := &provenance.Package{Manager: "rpm", Name: "bubblewrap", Version: "0.10.0-1.fc41"}
	if check := versionVerdict("bubblewrap 0.10.0", fedora, nil); !strings.Contains(check.Remedy, "rpm -q --changelog bubblewrap") {
		t.Errorf("rpm: %q", check.Remedy)
	}
	if check := versionVerdict("bubblewrap 0.8.0", nil, &provenance.NotOwnedError{Path: "/opt/bwrap"}); !strings.Contains(check.Remedy, "no distribution package") ||
		!strings.Contains(check.Detail, "package: none") {
		t.Errorf("not owned: %+v", check)
	}
	hung := errors.New("dpkg-query -S /usr/bin/bwrap: gave no answer in time")
	check = versionVerdict("bubblewrap 0.12.0", nil, hung)
	if check.Status != report.StatusOK || !strings.Contains(check.Detail, "could not be read: dpkg-query") {
		t.Errorf("hung query: %+v", check)
	}
}
