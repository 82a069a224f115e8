package provenance

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

func TestParsers(t *testing.T) {
	const path = "/usr/bin/bwrap"
	for _, tc := range []struct {
		name  string
		parse func(string, string) (Package, error)
		out   string
		want  Package // zero: an error
	}{
		{"dpkg", parseDpkgOwner, "bubblewrap: /usr/bin/bwrap\n", Package{Manager: "dpkg", Name: "bubblewrap"}},
		{"dpkg multi-arch", parseDpkgOwner, "bubblewrap:amd64: /usr/bin/bwrap\n", Package{Manager: "dpkg", Name: "bubblewrap"}},
		{"dpkg diversion", parseDpkgOwner, "diversion by foo from: /usr/bin/bwrap\nbubblewrap: /usr/bin/bwrap\n", Package{Manager: "dpkg", Name: "bubblewrap"}},
		{"dpkg two packages", parseDpkgOwner, "a, b: /usr/bin/bwrap\n", Package{}},
		{"dpkg other path", parseDpkgOwner, "bubblewrap: /usr/bin/bwrap-other\n", Package{}},
		{"dpkg shell in the name", parseDpkgOwner, "x;rm -rf /: /usr/bin/bwrap\n", Package{}},
		{"rpm", parseRPMOwner, "bubblewrap\t0.10.0-1.fc41\n", Package{Manager: "rpm", Name: "bubblewrap", Version: "0.10.0-1.fc41"}},
		{"rpm not owned", parseRPMOwner, "file /usr/bin/bwrap is not owned by any package\n", Package{}},
		{"apk", parseAPKOwner, "/usr/bin/bwrap is owned by bubblewrap-0.8.0-r1\n", Package{Manager: "apk", Name: "bubblewrap", Version: "0.8.0-r1"}},
		{"apk dashed name", parseAPKOwner, "/usr/bin/bwrap is owned by my-bubble-wrap-0.8.0-r1\n", Package{Manager: "apk", Name: "my-bubble-wrap", Version: "0.8.0-r1"}},
		{"apk nonsense", parseAPKOwner, "ERROR: something\n", Package{}},
		{"pacman", parsePacmanOwner, "/usr/bin/bwrap is owned by bubblewrap 0.11.0-1\n", Package{Manager: "pacman", Name: "bubblewrap", Version: "0.11.0-1"}},
		{"pacman version with a shell", parsePacmanOwner, "/usr/bin/bwrap is owned by bubblewrap 1$(id)\n", Package{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.parse(tc.out, path)
			if tc.want == (Package{}) {
				if err == nil {
					t.Errorf("accepted %q as %+v", tc.out, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// standIn puts an executable script named like a package tool in a directory of its own.
func standIn(t *testing.T, name, script string) func(string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	if err := livetest.WriteProgram(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return func(tool string) (string, error) {
		if tool == name {
			return path, nil
		}
		return "", errors.New("absent")
	}
}

// TestOwnerFaults: a real process that hangs, lies or is not asked (about a path no host
// package lists, so the stand-in tool is what answers).
func TestOwnerFaults(t *testing.T) {
	ctx := context.Background()
	t.Run("a query that hangs is cut off and named", func(t *testing.T) {
		lookPath := standIn(t, "dpkg-query", "exec sleep 60")
		ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		began := time.Now()
		_, err := Owner(ctx, "/opt/stand-in/bwrap", lookPath, Run)
		if err == nil || !strings.Contains(err.Error(), "no answer in time") {
			t.Errorf("err = %v", err)
		}
		if elapsed := time.Since(began); elapsed > 5*time.Second {
			t.Errorf("took %v", elapsed)
		}
	})
	t.Run("a query that lies is refused", func(t *testing.T) {
		lookPath := standIn(t, "dpkg-query", `case "$1" in -S) echo 'evil; reboot: /usr/bin/bwrap';; *) echo 1.0;; esac`)
		pkg, err := Owner(ctx, "/opt/stand-in/bwrap", lookPath, Run)
		if err == nil || pkg != (Package{}) {
			t.Errorf("got %+v, %v", pkg, err)
		}
	})
	t.Run("an owner without a version is named, and says so", func(t *testing.T) {
		lookPath := standIn(t, "dpkg-query", `case "$1" in -S) echo "bubblewrap: $2";; *) exit 0;; esac`)
		pkg, err := Owner(ctx, "/opt/stand-in/bwrap", lookPath, Run)
		if err == nil || pkg.Name != "bubblewrap" {
			t.Errorf("got %+v, %v", pkg, err)
		}
	})
	t.Run("no manager: not owned", func(t *testing.T) {
		_, err := Owner(ctx, "/opt/stand-in/bwrap", func(string) (string, error) { return "", errors.New("absent") }, Run)
		var notOwned *NotOwnedError
		if !errors.As(err, &notOwned) {
			t.Errorf("err = %v", err)
		}
	})
}

// TestOwnerLive asks this host's real package manager about its bwrap.
func TestOwnerLive(t *testing.T) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("no bwrap on PATH")
	}
	real, _ := filepath.EvalSymlinks(bwrap)
	if _, err := SystemLookPath("dpkg-query"); err != nil {
		t.Skip("not a dpkg host")
	}
	pkg, err := Owner(context.Background(), real, SystemLookPath, Run)
	want, _ := exec.Command("dpkg-query", "-W", "-f=${Version}", "bubblewrap").Output()
	if err != nil || pkg.Manager != "dpkg" || pkg.Name != "bubblewrap" || pkg.Version != string(want) {
		t.Errorf("got %+v, %v; want bubblewrap %s", pkg, err, want)
	}
	if _, err := Owner(context.Background(), "/usr/bin/no-such-bwrap-"+t.Name(), SystemLookPath, Run); err == nil {
		t.Error("a file no package owns has an owner")
	}
}

func TestDpkgListed(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"bubblewrap.list":             "/.\n/usr\n/usr/bin\n/usr/bin/bwrap\n",
		"other:amd64.list":            "/usr/bin/other\n",
		"bubblewrap-extra:arm64.list": "/usr/bin/bwrap-extra\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if name, ok := dpkgListed(dir, "/usr/bin/bwrap", []string{"bubblewrap"}); !ok || name != "bubblewrap" {
		t.Errorf("listed: %q %v", name, ok)
	}
	for _, path := range []string{"/usr/bin/bwrap-extra", "/usr/bin/other", "/opt/bwrap"} {
		if name, ok := dpkgListed(dir, path, []string{"bubblewrap"}); ok {
			t.Errorf("%s: listed as %s", path, name)
		}
	}
}

func TestDpkgStatusVersion(t *testing.T) {
	status := filepath.Join(t.TempDir(), "status")
	text := "Package: other\nStatus: install ok installed\nVersion: 9\n\n" +
		"Package: bubblewrap\nStatus: install ok installed\nArchitecture: amd64\nVersion: 0.8.0-2+deb12u1\nDescription: x\n Version: 666\n\n" +
		"Package: removed\nStatus: deinstall ok config-files\nVersion: 1.0\n"
	if err := os.WriteFile(status, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if version, ok := dpkgStatusVersion(status, "bubblewrap"); !ok || version != "0.8.0-2+deb12u1" {
		t.Errorf("bubblewrap: %q %v", version, ok)
	}
	for _, name := range []string{"removed", "absent"} {
		if version, ok := dpkgStatusVersion(status, name); ok {
			t.Errorf("%s: %q", name, version)
		}
	}
}

func TestPackageable(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/usr/bin/bwrap", true},
		{"/bin/bwrap", true},
		{"/opt/vendor/bin/bwrap", true},
		{"/usr/libexec/flatpak-bwrap", true},
		{"/usr/local/bin/bwrap", false},
		{"/usr/local", false},
		{"/usr/localx/bwrap", true},                                        // a sibling of /usr/local, not below it
		{"/usr/local/lib/bwrapkit/versions/253c70372599ac19/bwrap", false}, // root's managed install
		{"/root/.local/share/bwrapkit/bin/bwrap", false},
		{"/home/dev/.local/share/bwrapkit/bin/bwrap", false},
		{"/work/main/.cache/bwraps/bwrap-0.12.0", false},
		{"/tmp/bwrap", false},
		{"/srv/bwrap", false},
		{"/optional/bwrap", false},
		{"/var/lib/bwrapkit-ci/bwrap", true}, // /var/lib is a package tree
	} {
		if got := Packageable(tc.path); got != tc.want {
			t.Errorf("Packageable(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

// TestOwnerAsksNoManagerOutsidePackageTrees: a stand-in dpkg-query that would claim the
// file is never run for a path no package can own (the managed install), so that doctor
// pays nothing for the query.
func TestOwnerAsksNoManagerOutsidePackageTrees(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "asked")
	lookPath := standIn(t, "dpkg-query", `touch '`+marker+`'; echo "bubblewrap: $2"`)
	_, err := Owner(context.Background(), "/usr/local/lib/bwrapkit/bin/bwrap", lookPath, Run)
	var notOwned *NotOwnedError
	if !errors.As(err, &notOwned) {
		t.Errorf("err = %v, want not owned", err)
	}
	if _, statErr := os.Stat(marker); statErr == nil {
		t.Error("the package manager was asked about a path no package can own")
	}
	// The control: the same stand-in is asked, and answers, for a package tree's path.
	if pkg, _ := Owner(context.Background(), "/opt/stand-in/bwrap", lookPath, Run); pkg.Name != "bubblewrap" {
		t.Errorf("the stand-in did not answer for a package path: %+v", pkg)
	}
}
