package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// The transactional workdir, driven through the built binary on every bwrap, as root and
// as nobody, and judged by the host: what the project holds afterwards, and what the
// host's own git does there.

type runDoc struct {
	ExitCode    int    `json:"exit_code"`
	WorkdirMode string `json:"workdir_mode"`
	Changes     *struct{ Added, Modified, Deleted int }
	Refused     []struct{ Path, Rule string }
	Quarantine  string
}

// userGit is the host's git in project as the user asUsers runs the test as (prefix),
// with only that user's HOME and PATH: what the user's own git does after the sandbox.
func userGit(t *testing.T, prefix []string, project, home string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		argv := append(append(append([]string{}, prefix...), "env", "-i", "HOME="+home, newcomerPATH, "git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", project), args...)
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
}

// asUsers runs test as root (when we are) and as nobody, each with a project of its own.
func asUsers(t *testing.T, test func(t *testing.T, prefix []string, project, home string)) {
	users := []struct {
		name   string
		prefix []string
		uid    int
	}{}
	if os.Geteuid() == 0 {
		users = append(users, struct {
			name   string
			prefix []string
			uid    int
		}{"root", nil, 0})
	}
	if prefix, ok := asNobody(); ok {
		users = append(users, struct {
			name   string
			prefix []string
			uid    int
		}{"nobody", prefix, 65534})
	}
	for _, user := range users {
		t.Run(user.name, func(t *testing.T) {
			base := livetest.TempDir(t)
			if err := os.Chmod(base, 0o755); err != nil {
				t.Fatal(err)
			}
			project, home := filepath.Join(base, "project"), filepath.Join(base, "home")
			for _, dir := range []string{project, home} {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Chown(dir, user.uid, user.uid); err != nil {
					t.Fatal(err)
				}
			}
			test(t, user.prefix, project, home)
		})
	}
}

// runIn runs the built binary as prefix's user in project with HOME=home.
func runIn(t *testing.T, prefix []string, project, home string, args ...string) (int, string, string) {
	t.Helper()
	return runInEnv(t, prefix, project, home, nil, args...)
}

// runInEnv is runIn with extra variables in bwrapkit's environment.
func runInEnv(t *testing.T, prefix []string, project, home string, extra []string, args ...string) (int, string, string) {
	t.Helper()
	argv := append(append(append(append([]string{}, prefix...), "env", "-i", "HOME="+home, newcomerPATH), extra...), builtBinary)
	if len(args) > 0 && args[0] == "run" && !slices.Contains(args, "--workdir") {
		// The project is a scratch directory inside this checkout: without --workdir the
		// run would take the checkout's root for the project (the nearest .git above).
		args = append([]string{"run", "--workdir", project}, args[1:]...)
	}
	argv = append(argv, args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = project
	return runStatus(t, cmd)
}

// overlayAsUsers runs test under each bwrap with --overlay (the transactional mode), as
// root (when we are) and as nobody, each with a project of its own.
func overlayAsUsers(t *testing.T, test func(t *testing.T, bwrap livetest.Bwrap, prefix []string, project, home string)) {
	for _, bwrap := range livetest.Bwraps(t) {
		if !hasOverlay(bwrap.Path) {
			continue
		}
		t.Run(bwrap.Name, func(t *testing.T) {
			asUsers(t, func(t *testing.T, prefix []string, project, home string) {
				test(t, bwrap, prefix, project, home)
			})
		})
	}
}

// hasOverlay: the static bwraps have --overlay; Debian 12's 0.8.0 does not.
func hasOverlay(bwrap string) bool {
	out, _ := exec.Command(bwrap, "--help").CombinedOutput()
	return strings.Contains(string(out), "--overlay-src")
}

// attack is what a hostile command leaves for the host's tools: a repository in a
// subdirectory whose config runs a canary as core.fsmonitor, a symlink out of the
// project, a world-writable directory, a setuid file, a FIFO; and one honest file.
const attack = `set -e
mkdir -p sub/.git/objects sub/.git/refs
printf 'ref: refs/heads/main\n' > sub/.git/HEAD
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch %s; false"\n' > sub/.git/config
ln -s /etc escape
mkdir open && chmod 0777 open
echo x > suid && { chmod 4755 suid 2>/dev/null || true; }
mkfifo fifo 2>/dev/null || true
echo honest > honest.txt
`

func TestLiveTransactionalRefusesWhatHostToolsWouldTrust(t *testing.T) {
	for _, bwrap := range livetest.Bwraps(t) {
		t.Run(bwrap.Name, func(t *testing.T) {
			asUsers(t, func(t *testing.T, prefix []string, project, home string) {
				canary := filepath.Join(home, "canary")
				report := filepath.Join(home, "report.json")
				script := strings.ReplaceAll(attack, "%s", canary)
				if !hasOverlay(bwrap.Path) {
					// Debian's 0.8.0: the default is direct with one warning; requiring the
					// transactional mode refuses before anything runs.
					status, _, stderr := runIn(t, prefix, project, home, "run", "--workdir", project, "--bwrap", bwrap.Path, "--workdir-mode", "transactional", "--", "sh", "-c", "echo ran > ran")
					if status != 125 || !strings.Contains(stderr, "--workdir-mode transactional cannot be built") || !strings.Contains(stderr, "bwrapkit install") {
						t.Errorf("--workdir-mode transactional on %s: exit %d\n%s", bwrap.Path, status, stderr)
					}
					if _, err := os.Lstat(filepath.Join(project, "ran")); err == nil {
						t.Error("the command ran although the required mode could not be built")
					}
					status, _, stderr = runIn(t, prefix, project, home, "run", "--workdir", project, "--bwrap", bwrap.Path, "--report", report, "--", "sh", "-c", "echo ran > ran")
					if status != 0 || strings.Count(stderr, "warning: workdir mode direct") != 1 || !strings.Contains(stderr, "bwrapkit install") {
						t.Errorf("default run on %s: exit %d\n%s", bwrap.Path, status, stderr)
					}
					var doc runDoc
					data, _ := os.ReadFile(report)
					if json.Unmarshal(data, &doc) != nil || doc.WorkdirMode != "direct" {
						t.Errorf("report: %s", data)
					}
					return
				}
				status, _, stderr := runIn(t, prefix, project, home, "run", "--workdir", project, "--bwrap", bwrap.Path, "--report", report, "--", "sh", "-c", script)
				if status != 0 {
					t.Fatalf("exit %d\n%s", status, stderr)
				}
				var doc runDoc
				data, _ := os.ReadFile(report)
				if err := json.Unmarshal(data, &doc); err != nil || doc.WorkdirMode != "transactional" || doc.Changes == nil {
					t.Fatalf("report: %v\n%s", err, data)
				}
				// The host's state: nothing a host tool would trust, the honest file there.
				if info, err := os.Lstat(filepath.Join(project, "suid")); err == nil && info.Mode()&os.ModeSetuid != 0 {
					t.Error("a setuid file reached the project")
				}
				for _, name := range []string{"sub/.git", "escape", "open", "fifo"} {
					if _, err := os.Lstat(filepath.Join(project, name)); err == nil {
						t.Errorf("%s reached the project", name)
					}
				}
				if got, err := os.ReadFile(filepath.Join(project, "honest.txt")); err != nil || string(got) != "honest\n" {
					t.Errorf("the honest file did not land: %q %v", got, err)
				}
				// The host's git, run where the planted repository would be found.
				git := exec.Command("git", "status", "--short")
				git.Dir = filepath.Join(project, "sub")
				git.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "GIT_CEILING_DIRECTORIES=" + filepath.Dir(project)}
				_ = git.Run()
				if _, err := os.Lstat(canary); err == nil {
					t.Errorf("the host's git status ran the planted fsmonitor")
					os.Remove(canary)
				}
				rules := map[string]string{}
				for _, refused := range doc.Refused {
					rules[refused.Path] = refused.Rule
				}
				want := map[string]string{"sub/.git": "git-entry", "escape": "symlink-absolute", "open": "world-writable"}
				for path, rule := range want {
					if rules[path] != rule {
						t.Errorf("refused %s: rule %q, want %q (report: %v)", path, rules[path], rule, doc.Refused)
					}
					if !strings.Contains(stderr, "bwrapkit: refused "+path+": "+rule) {
						t.Errorf("stderr does not name %s as refused:\n%s", path, stderr)
					}
				}
				if doc.Quarantine == "" || !strings.Contains(stderr, doc.Quarantine) {
					t.Errorf("quarantine %q not named on stderr:\n%s", doc.Quarantine, stderr)
				}
				if _, err := os.Lstat(filepath.Join(doc.Quarantine, "upper", "sub", ".git", "config")); err != nil {
					t.Errorf("the refused .git is not in the quarantine: %v", err)
				}
				// --fail-on-refused turns a refusal into 123.
				status, _, _ = runIn(t, prefix, project, home, "run", "--workdir", project, "--bwrap", bwrap.Path, "--fail-on-refused", "--", "sh", "-c", "ln -s /etc escape2")
				if status != 123 {
					t.Errorf("--fail-on-refused: exit %d, want 123", status)
				}
			})
		})
	}
}

// TestLiveKilledRunLandsNothing: bwrapkit SIGKILLed while its command runs lands
// nothing; the next run on the project says so and removes the abandoned layer.
func TestLiveKilledRunLandsNothing(t *testing.T) {
	overlayAsUsers(t, func(t *testing.T, bwrap livetest.Bwrap, prefix []string, project, home string) {
		argv := append(append(append([]string{}, prefix...), "env", "-i", "HOME="+home, newcomerPATH, builtBinary), "run", "--workdir", project, "--bwrap", bwrap.Path, "--", "sh", "-c", "echo half > written; touch written-done; sleep 60")
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = project
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		layers := filepath.Join(home, ".cache", "bwrapkit", "layers")
		deadline := time.Now().Add(20 * time.Second)
		for {
			matches, _ := filepath.Glob(filepath.Join(layers, "*", "run-*", "upper", "written-done"))
			if len(matches) > 0 {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("the command never wrote its file")
			}
			time.Sleep(20 * time.Millisecond)
		}
		// The process started here: env exec'd setpriv exec'd bwrapkit, one pid.
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		time.Sleep(200 * time.Millisecond) // --die-with-parent ends the sandbox
		if _, err := os.Lstat(filepath.Join(project, "written")); err == nil {
			t.Fatal("a killed run landed its write")
		}
		status, _, stderr := runIn(t, prefix, project, home, "run", "--workdir", project, "--bwrap", bwrap.Path, "--", "true")
		if status != 0 || !strings.Contains(stderr, "was killed before it landed") {
			t.Errorf("the next run did not report the abandoned layer: exit %d\n%s", status, stderr)
		}
		if matches, _ := filepath.Glob(filepath.Join(layers, "*", "run-*")); len(matches) != 0 {
			t.Errorf("abandoned layers left: %v", matches)
		}
		if _, err := os.Lstat(filepath.Join(project, "written")); err == nil {
			t.Error("the next run landed the killed run's write")
		}
	})
}

// TestLiveCheckoutBinaryIsGuarded: `./bwrapkit run` in a checkout that holds bwrapkit and
// bwrapkit-helper (as make build leaves them) works transactionally, and a command's
// rewrite of either never lands, nor does a helper the command plants where there was
// none: the next run would execute them on the host.
func TestLiveCheckoutBinaryIsGuarded(t *testing.T) {
	overlayAsUsers(t, func(t *testing.T, bwrap livetest.Bwrap, prefix []string, project, home string) {
		self := filepath.Join(project, "bwrapkit")
		data, err := os.ReadFile(builtBinary)
		if err != nil {
			t.Fatal(err)
		}
		if err := livetest.WriteProgram(self, data, 0o755); err != nil {
			t.Fatal(err)
		}
		helper := filepath.Join(project, helperName)
		helperData, err := os.ReadFile(builtHelper)
		if err != nil {
			t.Fatal(err)
		}
		if err := livetest.WriteProgram(helper, helperData, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chown(self, uidOf(prefix), uidOf(prefix))
		os.Chown(helper, uidOf(prefix), uidOf(prefix))
		argv := append(append([]string{}, prefix...), "env", "-i", "HOME="+home, newcomerPATH, self, "run", "--workdir", project, "--bwrap", bwrap.Path, "--", "sh", "-c", "echo evil > bwrapkit; echo evil > bwrapkit-helper; echo ok > fine")
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = project
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "refused bwrapkit: protected") || !strings.Contains(string(out), "refused bwrapkit-helper: protected") {
			t.Errorf("./bwrapkit run: %v\n%s", err, out)
		}
		if got, _ := os.ReadFile(self); !bytes.Equal(got, data) {
			t.Error("the command's rewrite of ./bwrapkit landed")
		}
		if got, _ := os.ReadFile(helper); !bytes.Equal(got, helperData) {
			t.Error("the command's rewrite of ./bwrapkit-helper landed")
		}
		// Without a helper beside it (a plain go build), none may be planted there:
		// the next run would start it on the host as its keeper.
		if err := os.Remove(helper); err != nil {
			t.Fatal(err)
		}
		argv = append(append([]string{}, prefix...), "env", "-i", "HOME="+home, newcomerPATH, self, "run", "--workdir", project, "--bwrap", bwrap.Path, "--", "sh", "-c", "printf '#!/bin/sh\\necho planted\\n' > bwrapkit-helper; chmod 755 bwrapkit-helper")
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.Dir = project
		out, err = cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "refused bwrapkit-helper: protected") {
			t.Errorf("planting ./bwrapkit-helper: %v\n%s", err, out)
		}
		if _, err := os.Lstat(helper); err == nil {
			t.Error("a bwrapkit-helper the command planted landed beside ./bwrapkit")
		}
		if _, err := os.Stat(filepath.Join(project, "fine")); err != nil {
			t.Errorf("the run's other change did not land: %v", err)
		}
	})
}

// TestLiveKilledWhileLandingLosesNothing: bwrapkit SIGKILLed in the middle of a landing
// (6,000 new files spread over 100 existing directories, each its own rename). Each
// file that landed is whole, no temporary name is left in the project, and the next run
// says the landing was interrupted and keeps what did not land: the project and that
// quarantine together hold every file once.
func TestLiveKilledWhileLandingLosesNothing(t *testing.T) {
	overlayAsUsers(t, func(t *testing.T, bwrap livetest.Bwrap, prefix []string, project, home string) {
		const dirs, perDir = 100, 60
		if status, _, stderr := runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--", "sh", "-c",
			fmt.Sprintf("i=0; while [ $i -lt %d ]; do mkdir d$i; i=$((i+1)); done", dirs)); status != 0 {
			t.Fatalf("making the directories: %d %s", status, stderr)
		}
		write := fmt.Sprintf(`for d in d*; do i=0; while [ $i -lt %d ]; do echo whole > $d/f$i; i=$((i+1)); done; done`, perDir)
		layers := filepath.Join(home, ".cache", "bwrapkit", "layers")
		interrupted := false
		for attempt := 0; attempt < 5 && !interrupted; attempt++ {
			argv := append(append(append([]string{}, prefix...), "env", "-i", "HOME="+home, newcomerPATH, builtBinary),
				"run", "--workdir", project, "--bwrap", bwrap.Path, "--", "sh", "-c", write)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir = project
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { cmd.Wait(); close(exited) }()
		watch:
			for {
				select {
				case <-exited:
					break watch // it landed everything before the kill: try again
				default:
				}
				if marks, _ := filepath.Glob(filepath.Join(layers, "*", "run-*", "landing")); len(marks) > 0 {
					_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
					<-exited
					break watch
				}
				time.Sleep(time.Millisecond)
			}
			report := filepath.Join(home, "report.json")
			status, _, stderr := runIn(t, prefix, project, home, "run", "--workdir", project, "--bwrap", bwrap.Path, "--report", report, "--", "true")
			if status != 0 {
				t.Fatalf("the run after the kill: exit %d\n%s", status, stderr)
			}
			if !strings.Contains(stderr, "killed while landing") {
				// Not killed midway: the landing was complete (or had not begun). Clean
				// the files for the next attempt.
				for d := range dirs {
					files, _ := filepath.Glob(filepath.Join(project, fmt.Sprintf("d%d", d), "f*"))
					for _, f := range files {
						os.Remove(f)
					}
				}
				continue
			}
			interrupted = true
			if data, _ := os.ReadFile(report); !strings.Contains(string(data), "killed while landing") {
				t.Errorf("the report's warnings do not name the interrupted landing:\n%s", data)
			}
			kept, _ := filepath.Glob(filepath.Join(layers, "*", "quarantine-*"))
			if len(kept) != 1 {
				t.Fatalf("want the interrupted layer kept as one quarantine, found %v\n%s", kept, stderr)
			}
			landed, inQuarantine := 0, 0
			for d := range dirs {
				dir := fmt.Sprintf("d%d", d)
				names, err := os.ReadDir(filepath.Join(project, dir))
				if err != nil {
					t.Fatal(err)
				}
				for _, name := range names {
					if !strings.HasPrefix(name.Name(), "f") || strings.ContainsAny(name.Name(), ".~") {
						t.Errorf("a temporary or stray name in the project: %s/%s", dir, name.Name())
						continue
					}
					if data, _ := os.ReadFile(filepath.Join(project, dir, name.Name())); string(data) != "whole\n" {
						t.Errorf("%s/%s landed torn: %q", dir, name.Name(), data)
					}
					landed++
				}
				left, _ := filepath.Glob(filepath.Join(kept[0], "upper", dir, "f*"))
				inQuarantine += len(left)
			}
			t.Logf("killed while landing: %d files landed, %d kept in the quarantine", landed, inQuarantine)
			if landed+inQuarantine != dirs*perDir {
				t.Errorf("%d landed + %d kept = %d, want %d: files were lost", landed, inQuarantine, landed+inQuarantine, dirs*perDir)
			}
		}
		if !interrupted {
			t.Fatal("in 5 attempts no kill landed within the landing")
		}
	})
}

// TestLiveInterruptEndsALandingWait: runs of one project land one at a time, and a run
// whose turn does not come (another run's landing copies for as long as its command made
// it) ends on SIGINT like a running one: exit 130, nothing of it landed, its layer kept.
// The caller's landing lock is held here, as another run's landing holds it (the run's
// gate waits for it too, 2 s at most, then compares without it).
func TestLiveInterruptEndsALandingWait(t *testing.T) {
	overlayAsUsers(t, func(t *testing.T, bwrap livetest.Bwrap, prefix []string, project, home string) {
		if status, _, stderr := runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--", "true"); status != 0 {
			t.Fatalf("a first run: %d %s", status, stderr)
		}
		// The caller's landing lock: the root of every project's layers.
		lock, err := os.Open(filepath.Join(home, ".cache", "bwrapkit", "layers"))
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		argv := append(append(append([]string{}, prefix...), "env", "-i", "HOME="+home, newcomerPATH, builtBinary),
			"run", "--workdir", project, "--bwrap", bwrap.Path, "--", "sh", "-c", "echo b > b")
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = project
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// Its command is over and it waits in flock: a thread of it sleeps on the lock.
		waiting := func() bool {
			chans, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", cmd.Process.Pid))
			for _, file := range chans {
				if data, _ := os.ReadFile(file); strings.Contains(string(data), "lock") {
					return true
				}
			}
			return false
		}
		for deadline := time.Now().Add(20 * time.Second); !waiting(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("the run never came to wait for the landing lock\n%s", stderr.String())
			}
		}
		// The process started here: env exec'd setpriv exec'd bwrapkit, one pid.
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Fatalf("SIGINT did not end a run waiting to land\n%s", stderr.String())
		}
		if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(stderr.String(), "interrupted while waiting for another of your runs to finish landing") {
			t.Errorf("exit %d, want 130 naming the wait\n%s", code, stderr.String())
		}
		if _, err := os.Lstat(filepath.Join(project, "b")); err == nil {
			t.Error("an interrupted run landed")
		}
		if kept, _ := filepath.Glob(filepath.Join(home, ".cache", "bwrapkit", "layers", "*", "quarantine-*", "upper", "b")); len(kept) != 1 {
			t.Errorf("the interrupted run's layer was not kept: %v", kept)
		}
	})
}
