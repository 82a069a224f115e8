package main

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// snapshot is every entry under root: mode, size, mtime and content hash, links as
// their targets. Equal snapshots: nothing changed.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	entries := map[string]string{}
	filepath.WalkDir(root, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			entries[path] = "error " + err.Error()
			return nil
		}
		info, _ := entry.Info()
		line := fmt.Sprintf("%v %d %d", info.Mode(), info.Size(), info.ModTime().UnixNano())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			line += " -> " + target
		case info.Mode().IsRegular():
			data, _ := os.ReadFile(path)
			line += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		entries[path] = line
		return nil
	})
	return entries
}

func diffSnapshots(before, after map[string]string) []string {
	var changed []string
	for path, line := range after {
		if before[path] != line {
			changed = append(changed, path)
		}
	}
	for path := range before {
		if _, ok := after[path]; !ok {
			changed = append(changed, path+" (removed)")
		}
	}
	return changed
}

// TestE2ECachesAreWarmAndUnchanged: a project whose dependency is only in the caller's
// own Go module cache builds offline inside (GOPROXY=off) on a bwrap with overlays: the
// caller's module and build caches are the lower layers. Both stay byte for byte as
// they were, the build's writes land in the project's layer, and --cache none starts
// cold (the same build fails).
func TestE2ECachesAreWarmAndUnchanged(t *testing.T) {
	if _, err := os.Stat(filepath.Join(goBin, "go")); err != nil {
		livetest.Skip(t, "no Go at "+goBin)
	}
	caller := livetest.TempDir(t)
	cacheHome := filepath.Join(caller, ".cache")
	modules := filepath.Join(livetest.TempDir(t), "proxy")
	writeModuleProxy(t, modules)
	project := livetest.TempDir(t)
	os.WriteFile(filepath.Join(project, "go.mod"), []byte("module example.test/app\n\ngo 1.21\n\nrequire example.test/m v1.0.0\n"), 0o644)
	os.WriteFile(filepath.Join(project, "main.go"), []byte("package main\n\nimport _ \"example.test/m\"\n\nfunc main() {}\n"), 0o644)
	hostEnv := []string{"HOME=" + caller, "XDG_CACHE_HOME=" + cacheHome, "PATH=/usr/bin:/bin", "GOPROXY=file://" + modules, "GOSUMDB=off", "GOTOOLCHAIN=local",
		// The scratch project lies inside this checkout, whose .git another user (root) may
		// own: git then refuses nobody, and go build's VCS stamp fails with it.
		"GOFLAGS=-buildvcs=false"}
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", os.DevNull, "./..."}} {
		hostGo := exec.Command(filepath.Join(goBin, "go"), args...)
		hostGo.Dir, hostGo.Env = project, hostEnv
		if out, err := hostGo.CombinedOutput(); err != nil {
			t.Fatalf("warming the caller's caches (go %v): %v %s", args, err, out)
		}
	}
	modCache, buildCache := filepath.Join(caller, "go", "pkg", "mod"), filepath.Join(cacheHome, "go-build")
	before := map[string]map[string]string{modCache: snapshot(t, modCache), buildCache: snapshot(t, buildCache)}

	for _, bwrap := range livetest.Bwraps(t) {
		t.Run(bwrap.Name, func(t *testing.T) {
			state := livetest.TempDir(t) // bwrapkit's own cache: the project HOMEs
			// The project HOMEs live apart from the caller's watched caches (a cache
			// directory of their own), and GOCACHE names the caller's build cache, as a
			// user who sets it has it.
			environ := []string{"PATH=/usr/bin:/bin", "HOME=" + caller, "XDG_CACHE_HOME=" + livetest.TempDir(t), "GOCACHE=" + buildCache,
				"BWRAPKIT_BWRAP=" + bwrap.Path, "TMPDIR=" + livetest.TempDir(t), "BWRAPKIT_HOME=" + state}
			build := []string{"run", "--workdir", project, "--path", goBin, "--env", "GOPROXY=off", "--env", "GOFLAGS=-mod=readonly -buildvcs=false", "--env", "GOTOOLCHAIN=local", "--", "go", "build", "-o", "/tmp/app", "./..."}
			got := binaryRun(t, environ, build...)
			overlays := bwrap.Name != "debian" // Debian 12's 0.8.0 has no --overlay
			if overlays && got.status != 0 {
				t.Errorf("offline build with the caller's caches as lower layers: %d %s", got.status, got.stderr)
			}
			if !overlays && got.status == 0 {
				t.Errorf("a bwrap without --overlay built offline: where did the module come from?")
			}
			cold := binaryRun(t, environ, append([]string{"run", "--cache", "none"}, build[1:]...)...)
			if cold.status == 0 || !strings.Contains(cold.stderr, "example.test/m") {
				t.Errorf("--cache none built offline (%d): the layers are not what made the build warm\n%s", cold.status, cold.stderr)
			}
			for dir, was := range before {
				if changed := diffSnapshots(was, snapshot(t, dir)); len(changed) > 0 {
					t.Errorf("the caller's cache %s changed: %v", dir, changed[:min(len(changed), 5)])
				}
			}
		})
	}
}

// writeModuleProxy lays out a GOPROXY=file:// directory serving example.test/m v1.0.0.
func writeModuleProxy(t *testing.T, dir string) {
	t.Helper()
	versions := filepath.Join(dir, "example.test", "m", "@v")
	os.MkdirAll(versions, 0o755)
	os.WriteFile(filepath.Join(versions, "list"), []byte("v1.0.0\n"), 0o644)
	os.WriteFile(filepath.Join(versions, "v1.0.0.info"), []byte(`{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}`), 0o644)
	os.WriteFile(filepath.Join(versions, "v1.0.0.mod"), []byte("module example.test/m\n"), 0o644)
	archive := moduleZip(t)
	os.WriteFile(filepath.Join(versions, "v1.0.0.zip"), archive, 0o644)
}
