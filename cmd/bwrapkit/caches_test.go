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
	"time"

	"github.com/bwrapkit/bwrapkit/home"
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

// TestLiveConcurrentRunsShareNoCacheUpper: overlayfs gives an upper and work directory to
// one mount at a time (two at once: undefined, and about 1 mount in 80 failed at 32 runs
// of one project at once). A run that starts while another run of the project holds the
// project's cache layer gets an upper of its own over the caller's cache alone: it
// neither sees nor touches the layer the first run's mount writes, what it adds is
// dropped at its end, and the caller's cache never changes.
func TestLiveConcurrentRunsShareNoCacheUpper(t *testing.T) {
	caller := livetest.TempDir(t)
	npmCache := filepath.Join(caller, ".npm")
	if err := os.Mkdir(npmCache, 0o700); err != nil {
		t.Fatal(err)
	}
	project := livetest.TempDir(t)
	for _, bwrap := range livetest.Bwraps(t) {
		if bwrap.Name == "debian" {
			continue // Debian 12's 0.8.0 has no --overlay: no cache layers at all
		}
		t.Run(bwrap.Name, func(t *testing.T) {
			xdg := livetest.TempDir(t)
			environ := []string{"PATH=/usr/bin:/bin", "HOME=" + caller, "XDG_CACHE_HOME=" + xdg, "BWRAPKIT_BWRAP=" + bwrap.Path,
				"TMPDIR=" + livetest.TempDir(t), "BWRAPKIT_HOME=" + livetest.TempDir(t)}
			// The first run holds the project's layer: it writes a, then stays until its
			// stdin closes. (The same flags for every run: they share one project HOME.)
			first := exec.Command(builtBinary, "run", "--workdir", project, "--", "sh", "-c", `echo a > "$HOME/.npm/a" && cat >/dev/null`)
			first.Env = environ
			var firstErr strings.Builder
			first.Stderr = &firstErr
			release, err := first.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := first.Start(); err != nil {
				t.Fatal(err)
			}
			defer first.Wait()
			defer release.Close()
			projectUpper := ""
			for deadline := time.Now().Add(30 * time.Second); projectUpper == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				found, _ := filepath.Glob(filepath.Join(xdg, "bwrapkit", "home", "*"+home.LayersSuffix, "npm", "upper", "a"))
				if len(found) == 1 {
					projectUpper = filepath.Dir(found[0])
				}
			}
			if projectUpper == "" {
				t.Fatalf("the first run's write never reached the project's layer\n%s", firstErr.String())
			}
			second := binaryRun(t, environ, "run", "--workdir", project, "--", "sh", "-c", `test ! -e "$HOME/.npm/a" && echo b > "$HOME/.npm/b"`)
			if second.status != 0 {
				t.Errorf("a run beside the layer's holder: %d %s, want 0, its cache apart from the holder's layer", second.status, second.stderr)
			}
			if _, err := os.Lstat(filepath.Join(projectUpper, "b")); err == nil {
				t.Error("the second run wrote into the project's layer, which the first run's overlay holds as its upper")
			}
			release.Close()
			if err := first.Wait(); err != nil {
				t.Errorf("the layer's holder: %v\n%s", err, firstErr.String())
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(projectUpper), "run-*")); len(left) > 0 {
				t.Errorf("the second run's own layer was left: %v", left)
			}
			if entries, _ := os.ReadDir(npmCache); len(entries) > 0 {
				t.Errorf("the caller's npm cache changed: %v", entries)
			}
			// Once the holder is gone, the next run takes the project's layer (and sees a).
			third := binaryRun(t, environ, "run", "--workdir", project, "--", "sh", "-c", `cat "$HOME/.npm/a" && echo c > "$HOME/.npm/c"`)
			if _, err := os.Lstat(filepath.Join(projectUpper, "c")); third.status != 0 || err != nil {
				t.Errorf("the next run alone: %d %s, its write in the project's layer: %v", third.status, third.stderr, err)
			}
		})
	}
}
