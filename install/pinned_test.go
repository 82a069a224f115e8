package install

import (
	"archive/tar"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/locate"
)

// TestInstallFormats installs the real bwrap from each archive format and each kind of
// source, and checks the layout the install leaves.
func TestInstallFormats(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	for _, tc := range []struct {
		format, member, via string
	}{
		{"tar.gz", "bwrap", "http"},
		{"tar.xz", "bwrap", "http"},
		{"tar.zst", "bwrap", "http"},
		{"zip", "bwrap", "http"},
		{"raw", "", "http"},
		{"tar", "bwrap", "http"},
		{"tar.gz", "bwrap-0.8.0/bin/bwrap", "file"},
		{"zip", "./bwrap", "file"},
		{"raw", "", "file"},
		{"tar.xz", "bwrap", "path"},
	} {
		t.Run(tc.format+"-"+tc.via, func(t *testing.T) {
			t.Parallel()
			name := "bwrap." + tc.format
			entries := []entry{
				{name: "README", data: []byte("filler before the member\n")},
				{name: "bwrap-0.8.0/", typeflag: tar.TypeDir},
				{name: trimDot(tc.member), data: bwrap.data},
			}
			if tc.format == "raw" {
				entries = []entry{{data: bwrap.data}}
			}
			data := buildArchive(t, tc.format, entries...)
			var url string
			switch tc.via {
			case "http":
				url = serveBytes(t, name, data)
			case "file":
				url = "file://" + writeFile(t, name, data)
			case "path":
				url = writeFile(t, name, data)
			}
			home := filepath.Join(t.TempDir(), "home")
			artifact := bwrap.artifact(Source{URL: url, Member: tc.member})
			result := mustInstall(t, testOptions(home, artifact))

			want := Result{Method: Pinned, Path: locate.ManagedPath(home), SHA256: artifact.SHA256, Version: artifact.Version, Changed: true}
			if result != want {
				t.Errorf("result = %+v, want %+v", result, want)
			}
			assertActive(t, home, artifact)
			assertNoTemp(t, home)
			found, err := locate.Find(locate.Query{Home: home, PATH: "/nonexistent"}, locate.OS{})
			if err != nil || found.Source != locate.SourceManaged {
				t.Errorf("locate does not find the managed install: %+v %v", found, err)
			}
		})
	}
}

func trimDot(member string) string {
	if len(member) > 2 && member[:2] == "./" {
		return member[2:]
	}
	return member
}

// TestInstallIdempotent: the same pin again changes nothing, --force reinstalls, a new
// pin replaces the link and keeps the old version on disk.
func TestInstallIdempotent(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	home, before := installedHome(t, bwrap)
	artifact := bwrap.artifact(Source{URL: writeFile(t, "bwrap", bwrap.data)})
	linkInfo, _ := os.Lstat(filepath.Join(home, "bin", "bwrap"))

	again := mustInstall(t, testOptions(home, artifact))
	if again.Changed {
		t.Error("the same pin again reported changed=true")
	}
	assertUnchanged(t, home, before)
	if info, _ := os.Lstat(filepath.Join(home, "bin", "bwrap")); !info.ModTime().Equal(linkInfo.ModTime()) {
		t.Error("the same pin again replaced bin/bwrap")
	}

	// An unreachable source does not matter when nothing needs fetching.
	unreachable := bwrap.artifact(Source{URL: "http://127.0.0.1:1/bwrap"})
	if result := mustInstall(t, testOptions(home, unreachable)); result.Changed {
		t.Error("an already active pin was fetched again")
	}

	forced := testOptions(home, artifact)
	forced.Force = true
	if result := mustInstall(t, forced); !result.Changed {
		t.Error("--force reported changed=false")
	}
	assertActive(t, home, artifact)

	next := bwrap.variant()
	nextArtifact := next.artifact(Source{URL: writeFile(t, "bwrap", next.data)})
	mustInstall(t, testOptions(home, nextArtifact))
	assertActive(t, home, nextArtifact)
	if _, err := os.Stat(versionPath(home, artifact)); err != nil {
		t.Errorf("the previous version was removed: %v", err)
	}
	assertNoTemp(t, home)
}

// TestInstallRepairsTamperedVersion: a version file that no longer has its pin is not
// "already installed".
func TestInstallRepairsTamperedVersion(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	home, _ := installedHome(t, bwrap)
	artifact := bwrap.artifact(Source{URL: writeFile(t, "bwrap", bwrap.data)})
	if err := livetest.WriteProgram(versionPath(home, artifact), []byte("#!/bin/sh\necho pwned\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if result := mustInstall(t, testOptions(home, artifact)); !result.Changed {
		t.Error("a tampered version was taken for installed")
	}
	assertActive(t, home, artifact)
}

// TestInstallRefusesUnusableHome: a read-only or noexec home fails before any download.
func TestInstallRefusesUnusableHome(t *testing.T) {
	requireRoot(t, "mount tmpfs file systems")
	bwrap := loadBwrap(t)
	for _, tc := range []struct{ options, want string }{
		{"noexec", "mounted noexec"},
		{"ro", "read-only file system"},
	} {
		t.Run(tc.options, func(t *testing.T) {
			home := mountTmpfs(t, "size=4m,"+tc.options)
			requests := 0
			url := countingServer(t, bwrap.data, &requests)
			_, err := Install(context.Background(), testOptions(home, bwrap.artifact(Source{URL: url})))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("install into a %s home: %v, want %q", tc.options, err, tc.want)
			}
			if requests != 0 {
				t.Errorf("%d downloads before the home was checked", requests)
			}
		})
	}
}

func TestInstallLockWaitIsBounded(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	unlock, err := lockHome(context.Background(), home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	started := time.Now()
	_, err = lockHome(ctx, home, nil)
	if err == nil || !strings.Contains(err.Error(), "another installer holds") {
		t.Fatalf("second lock: %v", err)
	}
	if waited := time.Since(started); waited > 2*time.Second {
		t.Errorf("lock wait took %s past its deadline", waited)
	}
}

// TestInstallDefaultManifestFromMirror installs the embedded default pin, the real static
// bwrap 0.12.0, through --mirror from the release archive scripts/ leaves in .cache/.
func TestInstallDefaultManifestFromMirror(t *testing.T) {
	t.Parallel()
	mirror := livetest.CachedBwraps()
	if _, err := os.Stat(filepath.Join(mirror, "bwrap-0.12.0-linux-amd64.tar.gz")); err != nil {
		livetest.Skip(t, "the release archive is not built (scripts/get-test-bwraps.sh): "+err.Error())
	}
	artifact, err := Default().Artifact("amd64")
	if err != nil {
		t.Fatal(err)
	}
	if artifact, err = artifact.WithMirror(mirror); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(t.TempDir(), "home")
	result := mustInstall(t, testOptions(home, artifact))
	if result.Version != "0.12.0" || !result.Changed {
		t.Errorf("result = %+v", result)
	}
	assertActive(t, home, artifact)
}
