package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/netproxy"
	"github.com/bwrapkit/bwrapkit/sandbox/lifetime"
	"golang.org/x/sys/unix"
)

func TestHelperFits(t *testing.T) {
	own := unix.Stat_t{Uid: 1000, Mode: unix.S_IFREG | 0o755}
	dir := unix.Stat_t{Uid: 1000, Mode: unix.S_IFDIR | 0o755}
	cases := []struct {
		name   string
		dir    *unix.Stat_t
		helper unix.Stat_t
		fits   bool
	}{
		{"in root's /usr/local/bin", &unix.Stat_t{Uid: 0, Mode: unix.S_IFDIR | 0o755}, unix.Stat_t{Uid: 0, Mode: unix.S_IFREG | 0o755}, true},
		{"in a sticky world-writable directory (/tmp)", &unix.Stat_t{Uid: 0, Mode: unix.S_IFDIR | 0o1777}, unix.Stat_t{Uid: 0, Mode: unix.S_IFREG | 0o755}, false},
		{"in a group-writable directory", &unix.Stat_t{Uid: 1000, Mode: unix.S_IFDIR | 0o775}, unix.Stat_t{Uid: 1000, Mode: unix.S_IFREG | 0o755}, false},
		{"in another user's directory", &unix.Stat_t{Uid: 1001, Mode: unix.S_IFDIR | 0o755}, unix.Stat_t{Uid: 1000, Mode: unix.S_IFREG | 0o755}, false},
		{"bwrapkit's owner, 0755", nil, unix.Stat_t{Uid: 1000, Mode: unix.S_IFREG | 0o755}, true},
		{"root's, 0555", nil, unix.Stat_t{Uid: 0, Mode: unix.S_IFREG | 0o555}, true},
		{"owner-only 0700", nil, unix.Stat_t{Uid: 1000, Mode: unix.S_IFREG | 0o700}, true},
		{"another user's", nil, unix.Stat_t{Uid: 1001, Mode: unix.S_IFREG | 0o755}, false},
		{"group-writable", nil, unix.Stat_t{Uid: 1000, Mode: unix.S_IFREG | 0o775}, false},
		{"world-writable", nil, unix.Stat_t{Uid: 0, Mode: unix.S_IFREG | 0o757}, false},
		{"not executable", nil, unix.Stat_t{Uid: 1000, Mode: unix.S_IFREG | 0o644}, false},
		{"a symlink", nil, unix.Stat_t{Uid: 1000, Mode: unix.S_IFLNK | 0o777}, false},
		{"a directory", nil, unix.Stat_t{Uid: 1000, Mode: unix.S_IFDIR | 0o755}, false},
	}
	for _, c := range cases {
		in := dir
		if c.dir != nil {
			in = *c.dir
		}
		if err := helperFits(own, in, c.helper); (err == nil) != c.fits {
			t.Errorf("%s: helperFits = %v, want fits=%v", c.name, err, c.fits)
		}
	}
}

// TestLiveHelperStandsIn: with bwrapkit-helper beside bwrapkit, a run's keeper (outside)
// and its network bridge (bound inside; root has none, see netproxy.ServeNamespace) are the
// helper; a helper that is group-writable,
// another user's or in a directory others can write is passed over for bwrapkit itself,
// and the run still works.
func TestLiveHelperStandsIn(t *testing.T) {
	livetest.Bwraps(t) // skips (or fails under BWRAPKIT_TEST_REQUIRE_LIVE) without a usable bwrap
	self, helper := builtPrograms(t)
	cases := []struct {
		name       string
		mode       os.FileMode
		owner      int
		dirMode    os.FileMode
		usesItself bool
	}{
		{"fit", 0o755, 0, 0o755, false},
		{"group-writable", 0o775, 0, 0o755, true},
		{"another user's", 0o755, 4242, 0o755, true},
		{"in a shared directory", 0o755, 0, 0o1777, true},
	}
	asUsers(t, func(t *testing.T, prefix []string, project, home string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if c.owner != 0 && os.Geteuid() != 0 {
					t.Skip("only root can give the helper to another user")
				}
				bin, ownBinary, helperBinary := programPair(t, self, helper)
				if err := os.Chmod(helperBinary, c.mode); err != nil {
					t.Fatal(err)
				}
				if c.owner != 0 {
					if err := os.Chown(helperBinary, c.owner, c.owner); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Chmod(bin, c.dirMode); err != nil {
					t.Fatal(err)
				}
				want, wantSize := helperBinary, strconv.Itoa(len(helper))
				if c.usesItself {
					want, wantSize = ownBinary, strconv.Itoa(len(self))
				}
				if len(prefix) == 0 && netproxy.CanEnterNamespaces() {
					wantSize = "no bridge" // root makes the sandbox's listener from outside
				}
				argv := append(append([]string{}, prefix...), "env", "-i", "HOME="+home, newcomerPATH, ownBinary,
					"run", "--workdir", project, "--", "sh", "-c", "wc -c < /run/bwrapkit/bwrapkit 2>/dev/null || echo no bridge; sleep 1")
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Dir = project
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				keeper := ""
				for deadline := time.Now().Add(5 * time.Second); keeper == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					keeper = keeperOf(bin)
				}
				if err := cmd.Wait(); err != nil {
					t.Fatalf("run: %v\n%s", err, stderr.String())
				}
				if keeper != want {
					t.Errorf("the run's keeper was %q, want %q", keeper, want)
				}
				if got := strings.TrimSpace(stdout.String()); got != wantSize {
					t.Errorf("the bridge bound inside: %q, want %s (%s)", got, wantSize, want)
				}
			})
		}
	})
}

// keeperOf is the executable of a running keeper started from a binary in dir, if any.
func keeperOf(dir string) string {
	entries, _ := os.ReadDir("/proc")
	for _, entry := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) < 2 || args[1] != lifetime.KeeperCommand || filepath.Dir(args[0]) != dir {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", entry.Name(), "exe")); err == nil {
			return exe
		}
	}
	return ""
}

// TestLiveDeletedBinaryRefusesTheRun: a bwrapkit whose file was deleted after it started
// (an upgrade replaced it) cannot start its keeper by that name, and the run is refused
// before the command, never run unkept.
func TestLiveDeletedBinaryRefusesTheRun(t *testing.T) {
	livetest.Bwraps(t)
	self, err := os.ReadFile(builtBinary)
	if err != nil {
		t.Fatal(err)
	}
	dir := livetest.TempDir(t)
	copied := filepath.Join(dir, "bwrapkit")
	if err := livetest.WriteProgram(copied, self, 0o755); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(copied)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := os.Remove(copied); err != nil {
		t.Fatal(err)
	}
	workdir := livetest.TempDir(t)
	marker := filepath.Join(workdir, "ran")
	cmd := exec.Command("/proc/self/fd/3", "run", "--workdir", workdir, "--", "touch", marker)
	cmd.ExtraFiles = []*os.File{held}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + livetest.TempDir(t)}
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != exitUnavailable || !strings.Contains(string(out), "keeper") {
		t.Errorf("run from a deleted binary: %v\n%s\nwant 125 naming the keeper", err, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although the run had no keeper")
	}
}

// TestLiveDoctorProbeIsTheHelper: with bwrapkit-helper beside bwrapkit, the doctor's probe
// inside its sandboxes is the helper (the launch check names it), and a helper of another
// build refuses to be it: the doctor, which asks first, uses bwrapkit itself and warns
// with the remedy, rather than judging observations it may read otherwise or failing a
// host that can sandbox.
func TestLiveDoctorProbeIsTheHelper(t *testing.T) {
	livetest.Bwraps(t)
	self, helper := builtPrograms(t)
	// The probe's own refusal, asked directly (its acceptance is the same-build case below).
	refusal := exec.Command(builtHelper, probeCommandName, "build=v9.9.9-other", "noop")
	var stderr bytes.Buffer
	refusal.Stderr = &stderr
	if err := refusal.Run(); refusal.ProcessState.ExitCode() != 2 || !strings.Contains(stderr.String(), "bwrapkit v9.9.9-other") {
		t.Errorf("helper probe for another build: %v, want exit 2 naming the doctor's build\n%s", err, stderr.String())
	}
	stale := ""
	if goTool, err := exec.LookPath("go"); err == nil && os.Geteuid() == 0 {
		stale = filepath.Join(t.TempDir(), helperName)
		build := exec.Command(goTool, "build", "-ldflags", "-X main.version=v0.0.1-stale", "-o", stale, "../bwrapkit-helper")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building a stale helper: %v\n%s", err, out)
		}
		if helper, err = os.ReadFile(stale); err != nil {
			t.Fatal(err)
		}
	}
	fresh, _ := os.ReadFile(builtHelper)
	asUsers(t, func(t *testing.T, prefix []string, project, home string) {
		for _, c := range []struct {
			name   string
			helper []byte
		}{{"same build", fresh}, {"another build", helper}} {
			t.Run(c.name, func(t *testing.T) {
				if c.name == "another build" && stale == "" {
					t.Skip("building a helper of another build needs root and a Go toolchain")
				}
				_, ownBinary, helperBinary := programPair(t, self, c.helper)
				argv := append(append([]string{}, prefix...), "env", "-i", "HOME="+home, newcomerPATH, ownBinary,
					"doctor", "--json", "--check", "launch")
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Dir = project
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				runErr := cmd.Run()
				var doc struct {
					Checks []struct{ ID, Status, Summary, Detail, Remedy string }
				}
				if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
					t.Fatalf("%v: %v\n%s\n%s", runErr, err, stdout.String(), stderr.String())
				}
				var launch struct{ ID, Status, Summary, Detail, Remedy string }
				for _, check := range doc.Checks {
					if check.ID == "launch" {
						launch = check
					}
				}
				switch c.name {
				case "same build":
					if launch.Status != "ok" || !strings.Contains(launch.Detail, "the probe: "+helperBinary) {
						t.Errorf("launch: %+v, want ok with the helper as the probe", launch)
					}
				default:
					// Passed over for bwrapkit itself, and said: a half-done upgrade is not
					// a host that cannot sandbox, but runs would start that helper.
					if launch.Status != "warn" || !strings.Contains(launch.Summary, "v0.0.1-stale") || !strings.Contains(launch.Summary, "not of this build") ||
						!strings.Contains(launch.Detail, "the probe: "+ownBinary) || !strings.Contains(launch.Remedy, "replace it") {
						t.Errorf("launch: %+v, want a warning naming the helper's build, with bwrapkit as the probe and the remedy", launch)
					}
				}
			})
		}
	})
}

// programPair writes bwrapkit (self) and bwrapkit-helper (helper) into a directory of
// their own, as make build and the release put them, both 0755 in a 0755 directory.
func programPair(t *testing.T, self, helper []byte) (bin, ownBinary, helperBinary string) {
	t.Helper()
	bin = filepath.Join(livetest.TempDir(t), "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(bin), 0o755)
	ownBinary, helperBinary = filepath.Join(bin, "bwrapkit"), filepath.Join(bin, helperName)
	if err := livetest.WriteProgram(ownBinary, self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := livetest.WriteProgram(helperBinary, helper, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, ownBinary, helperBinary
}

// builtPrograms are the test's built bwrapkit and bwrapkit-helper.
func builtPrograms(t *testing.T) (self, helper []byte) {
	t.Helper()
	self, err := os.ReadFile(builtBinary)
	if err != nil {
		t.Fatal(err)
	}
	helper, err = os.ReadFile(builtHelper)
	if err != nil {
		t.Fatalf("%v (make build puts bwrapkit-helper beside bwrapkit)", err)
	}
	return self, helper
}
