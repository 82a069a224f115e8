package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// gitRepo makes a repository with one commit, and no hooks/ (as some clones have none).
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		livetest.Skip(t, "no git")
	}
	repo := livetest.TempDir(t)
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := hostGit(repo, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.RemoveAll(filepath.Join(repo, ".git", "hooks"))
	return repo
}

// hostGit is git as the host runs it, with an identity and nothing of the user's config.
func hostGit(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
	cmd.Dir = dir
	// The ceiling keeps a broken repository from sending git up to an enclosing one.
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir)}
	return cmd
}

const gitIdentity = "git -c user.email=t@example.com -c user.name=t"

// TestGitCommitModeLive: commit, stash and checkout -b work with --git commit, and are
// refused with one bwrapkit line naming the policy and the flag in the default mode.
func TestGitCommitModeLive(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	repo := gitRepo(t)
	environ, _ := attackEnv(t, bwrap)
	got := binaryRun(t, environ, "run", "--workdir", repo, "--", "sh", "-c", gitIdentity+" commit -q --allow-empty -m refused")
	if got.status == 0 || strings.Count(got.stderr, "--git commit") != 1 || !strings.Contains(got.stderr, "--git readonly") {
		t.Errorf("commit in readonly mode: status %d %q", got.status, got.stderr)
	}
	os.WriteFile(filepath.Join(repo, "f"), []byte("x"), 0o644)
	script := gitIdentity + " add f && " + gitIdentity + " commit -q -m inside && echo y >> f && " + gitIdentity + " stash -q && " + gitIdentity + " checkout -q -b feature"
	got = binaryRun(t, environ, "run", "--git", "commit", "--workdir", repo, "--", "sh", "-c", script)
	if got.status != 0 {
		t.Fatalf("commit mode: status %d %q", got.status, got.stderr)
	}
	out, _ := hostGit(repo, "log", "--format=%s", "feature").Output()
	stash, _ := hostGit(repo, "stash", "list").Output()
	if string(out) != "inside\ninit\n" || len(stash) == 0 {
		t.Errorf("on the host: log %q, stash %q", out, stash)
	}
}

// TestAttackGitCommitModeCannotArmTheHostsGit: a commit-mode command tries every way to
// make the host's next `git status` run its code: a fsmonitor in the config, a hook, a
// commondir leading to a config of its own, and a submodule it adds to the index whose
// gitdir has a fsmonitor. The host git must run none of them.
func TestAttackGitCommitModeCannotArmTheHostsGit(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	repo := gitRepo(t)
	environ, _ := attackEnv(t, bwrap)
	pwned := filepath.Join(livetest.TempDir(t), "pwned")
	payload := "touch " + pwned
	script := strings.Join([]string{
		`printf '[core]\n\tfsmonitor = ` + payload + `\n' >> .git/config`,
		`printf '#!/bin/sh\n` + payload + `\n' > .git/hooks/post-checkout; chmod +x .git/hooks/post-checkout`,
		`mkdir -p evil-common && cp -r .git/objects .git/refs .git/HEAD evil-common/ && printf '[core]\n\tfsmonitor = ` + payload + `\n' > evil-common/config && echo ../evil-common > .git/commondir.tmp`,
		`git init -q evil && git -C evil config core.fsmonitor "` + payload + `"`,
		`git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),evil`,
		`mv .git/commondir.tmp .git/commondir`,
		`true`,
	}, "; ")
	got := binaryRun(t, environ, "run", "--git", "commit", "--workdir", repo, "--", "sh", "-c", script)
	if got.status != 0 {
		t.Fatalf("status %d %q", got.status, got.stderr)
	}
	if !strings.Contains(got.stderr, "moved aside") {
		t.Errorf("nothing was moved aside: %q", got.stderr)
	}
	for _, args := range [][]string{{"status"}, {"checkout", "-q", "-b", "after"}, {"status", "--ignore-submodules=none"}} {
		out, err := hostGit(repo, args...).CombinedOutput()
		t.Logf("host git %v: %v %s", args, err, out)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatalf("the host's git ran the command's code")
	}
	config, _ := os.ReadFile(filepath.Join(repo, ".git", "config"))
	if strings.Contains(string(config), "fsmonitor") {
		t.Errorf("the config was changed: %s", config)
	}
}

// TestGitWorktreeLive: a linked worktree as the workdir reads its history (its main
// .git is bound read-only); commit mode there is refused, naming the main worktree.
func TestGitWorktreeLive(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	repo := gitRepo(t)
	worktree := filepath.Join(livetest.TempDir(t), "wt")
	if out, err := hostGit(repo, "worktree", "add", "-q", worktree).CombinedOutput(); err != nil {
		t.Fatalf("git worktree add: %v %s", err, out)
	}
	environ, _ := attackEnv(t, bwrap)
	got := binaryRun(t, environ, "run", "--workdir", worktree, "--", "git", "log", "--format=%s")
	if got.status != 0 || got.stdout != "init\n" {
		t.Errorf("git log in a worktree: %d %q %q", got.status, got.stdout, got.stderr)
	}
	got = binaryRun(t, environ, "run", "--workdir", worktree, "--", "sh", "-c", "echo x >> "+filepath.Join(repo, ".git", "config"))
	if got.status == 0 {
		t.Errorf("the main .git was writable from the worktree")
	}
	got = binaryRun(t, environ, "run", "--git", "commit", "--workdir", worktree, "--", "true")
	if got.status != exitUsage || !strings.Contains(got.stderr, "linked worktree") {
		t.Errorf("commit mode in a worktree: %d %q", got.status, got.stderr)
	}
}

// TestAttackPlantedGitfileShowsNoOtherRepository: a workdir without .git can get a
// gitfile planted; pointing it at another repository's worktree gitdir must not make
// the next run bind that repository (its gitdir does not lead back to this workdir).
func TestAttackPlantedGitfileShowsNoOtherRepository(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	secret := gitRepo(t)
	other := filepath.Join(livetest.TempDir(t), "wt")
	if out, err := hostGit(secret, "worktree", "add", "-q", other).CombinedOutput(); err != nil {
		t.Fatalf("git worktree add: %v %s", err, out)
	}
	workdir := livetest.TempDir(t)
	environ, _ := attackEnv(t, bwrap)
	plant := "echo 'gitdir: " + filepath.Join(secret, ".git", "worktrees", "wt") + "' > .git"
	if got := binaryRun(t, environ, "run", "--workdir", workdir, "--", "sh", "-c", plant); got.status != 0 {
		t.Fatalf("planting: %d %q", got.status, got.stderr)
	}
	got := binaryRun(t, environ, "run", "--workdir", workdir, "--", "ls", filepath.Join(secret, ".git"))
	if got.status == 0 {
		t.Errorf("the other repository's .git is visible: %q", got.stdout)
	}
}

// TestGitSubdirectoryLive: a tracked subdirectory of a repository as the workdir reads
// its history (the repository's .git bound read-only, and not writable); an untracked
// directory under a repository (a home kept in git) does not get that .git shown.
func TestGitSubdirectoryLive(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	repo := gitRepo(t)
	sub := filepath.Join(repo, "pkg")
	os.Mkdir(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "f.go"), []byte("package pkg\n"), 0o644)
	untracked := filepath.Join(repo, "scratch")
	os.Mkdir(untracked, 0o755)
	for _, args := range [][]string{{"add", "pkg"}, {"commit", "-q", "-m", "pkg"}} {
		if out, err := hostGit(repo, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	environ, _ := attackEnv(t, bwrap)
	got := binaryRun(t, environ, "run", "--workdir", sub, "--", "git", "log", "--format=%s", "--", ".")
	if got.status != 0 || got.stdout != "pkg\n" {
		t.Errorf("git log in a subdirectory: %d %q %q", got.status, got.stdout, got.stderr)
	}
	got = binaryRun(t, environ, "run", "--workdir", sub, "--", "sh", "-c", "echo x >> "+filepath.Join(repo, ".git", "config"))
	if got.status == 0 {
		t.Errorf("the repository's .git was writable from a subdirectory")
	}
	got = binaryRun(t, environ, "run", "--workdir", untracked, "--", "ls", filepath.Join(repo, ".git"))
	if got.status == 0 {
		t.Errorf("an untracked directory's run shows the enclosing .git: %q", got.stdout)
	}
	got = binaryRun(t, environ, "run", "--git", "commit", "--workdir", sub, "--", "true")
	if got.status != exitUsage || !strings.Contains(got.stderr, "subdirectory of the repository") {
		t.Errorf("commit mode in a subdirectory: %d %q", got.status, got.stderr)
	}
}

// TestAttackCommitModeUnboundRepositoriesCannotBeArmed: the nested repositories a direct
// commit-mode run cannot bind read-only (a .git that is a symlink, every one past the
// 256 it binds, a gitfile whose gitdir lies outside the project in an --rw path) have
// their config armed in place by the command. The audit must move each aside, and the
// host's git run in each must run nothing of the command's.
func TestAttackCommitModeUnboundRepositoriesCannotBeArmed(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	repo := gitRepo(t)
	environ, _ := attackEnv(t, bwrap)
	pwned := filepath.Join(livetest.TempDir(t), "pwned")
	outside := livetest.TempDir(t)
	setup := func(dir string, args ...string) {
		t.Helper()
		if out, err := hostGit(dir, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v in %s: %v %s", args, dir, err, out)
		}
	}
	// A .git that is a symlink to a git directory elsewhere in the project.
	setup(repo, "init", "-q", "store-src")
	os.MkdirAll(filepath.Join(repo, "store"), 0o755)
	os.Rename(filepath.Join(repo, "store-src", ".git"), filepath.Join(repo, "store", "linked.git"))
	os.RemoveAll(filepath.Join(repo, "store-src"))
	os.MkdirAll(filepath.Join(repo, "linked"), 0o755)
	os.Symlink("../store/linked.git", filepath.Join(repo, "linked", ".git"))
	// 257 nested repositories: more than a run binds.
	setup(repo, "init", "-q", "vendor/n000")
	for i := 1; i <= 256; i++ {
		cp := exec.Command("cp", "-r", filepath.Join(repo, "vendor", "n000"), filepath.Join(repo, "vendor", fmt.Sprintf("n%03d", i)))
		if out, err := cp.CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	// A gitfile naming a gitdir outside the project, which the run may write (--rw).
	setup(outside, "init", "-q", "away")
	os.MkdirAll(filepath.Join(repo, "wt"), 0o755)
	os.WriteFile(filepath.Join(repo, "wt", ".git"), []byte("gitdir: "+filepath.Join(outside, "away", ".git")+"\n"), 0o644)
	arm := func(config string) string {
		return `printf '[core]\n\tfsmonitor = touch ` + pwned + `\n' >> ` + config
	}
	script := strings.Join([]string{
		arm("linked/.git/config"),
		arm("vendor/n256/.git/config"),
		arm(filepath.Join(outside, "away", ".git", "config")),
		// A commit in an unbound repository is its own business: no move.
		gitIdentity + ` -C vendor/n100 commit -q --allow-empty -m inside`,
		`true`,
	}, "; ")
	got := binaryRun(t, environ, "run", "--git", "commit", "--workdir-mode", "direct", "--rw", outside, "--workdir", repo, "--", "sh", "-c", script)
	if got.status != 0 {
		t.Fatalf("status %d %q", got.status, got.stderr)
	}
	for _, dir := range []string{"linked", filepath.Join("vendor", "n256"), "wt"} {
		if !strings.Contains(got.stderr, filepath.Join(repo, dir, ".git")+" -> ") {
			t.Errorf("%s/.git was not moved aside: %q", dir, got.stderr)
		}
		out, err := hostGit(filepath.Join(repo, dir), "status").CombinedOutput()
		t.Logf("host git status in %s: %v %s", dir, err, out)
	}
	for _, dir := range []string{"n255", "n100"} {
		if strings.Contains(got.stderr, filepath.Join(repo, "vendor", dir, ".git")+" -> ") {
			t.Errorf("vendor/%s/.git, untouched or committed in, was moved aside too: %q", dir, got.stderr)
		}
	}
	if out, _ := hostGit(filepath.Join(repo, "vendor", "n100"), "log", "--format=%s").Output(); string(out) != "inside\n" {
		t.Errorf("the commit in vendor/n100: %q", out)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatalf("the host's git ran the command's code")
	}
}

// TestAttackKilledCommitModeRunIsStillAudited: a direct commit-mode command arms the
// config of a nested repository the run cannot bind (a .git that is a symlink), then
// waits, and bwrapkit is SIGKILLed (an agent's tool timeout does that), alone or with its
// keeper (pkill -9 -f bwrapkit, a killed scope). The audit must still be done before any
// git could run there: by the keeper once the sandbox is gone, or else by the next run on
// the project before anything else. The .git is moved aside, the host's git status there
// runs nothing of the command's, the pending record is removed, and the move is said once,
// by the next run. Without either the payload ran.
func TestAttackKilledCommitModeRunIsStillAudited(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	for _, withKeeper := range []bool{false, true} {
		name := map[bool]string{false: "bwrapkit killed", true: "bwrapkit and its keeper killed"}[withKeeper]
		t.Run(name, func(t *testing.T) {
			repo := gitRepo(t)
			environ, cache := attackEnv(t, bwrap)
			pwned := filepath.Join(livetest.TempDir(t), "pwned")
			if out, err := hostGit(repo, "init", "-q", "store-src").CombinedOutput(); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			os.MkdirAll(filepath.Join(repo, "store"), 0o755)
			os.Rename(filepath.Join(repo, "store-src", ".git"), filepath.Join(repo, "store", "linked.git"))
			os.RemoveAll(filepath.Join(repo, "store-src"))
			os.MkdirAll(filepath.Join(repo, "linked"), 0o755)
			os.Symlink("../store/linked.git", filepath.Join(repo, "linked", ".git"))
			script := `printf '[core]\n\tfsmonitor = touch ` + pwned + `\n' >> linked/.git/config && touch armed && sleep 60`
			cmd := exec.Command(builtBinary, "run", "--git", "commit", "--workdir-mode", "direct", "--workdir", repo, "--", "sh", "-c", script)
			cmd.Env = environ
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor := func(what string, done func() bool) {
				t.Helper()
				for deadline := time.Now().Add(20 * time.Second); !done(); time.Sleep(20 * time.Millisecond) {
					if time.Now().After(deadline) {
						cmd.Process.Kill()
						cmd.Wait()
						t.Fatalf("%s: not within 20 s", what)
					}
				}
			}
			waitFor("the command arming the config", func() bool { _, err := os.Stat(filepath.Join(repo, "armed")); return err == nil })
			records, _ := filepath.Glob(filepath.Join(cache, "bwrapkit", "layers", "*", "audit-pending-*"))
			if len(records) != 1 {
				t.Fatalf("pending audit records while the run goes on: %v", records)
			}
			if withKeeper {
				keeper := childNamed(cmd.Process.Pid, "sandbox-keeper")
				if keeper == 0 {
					t.Fatal("the run's keeper was not found")
				}
				_ = syscall.Kill(keeper, syscall.SIGKILL)
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			logFile := filepath.Join(filepath.Dir(records[0]), sandbox.AuditLogName)
			if withKeeper {
				// Nothing did the audit yet: bwrap's parent-death signal ends the sandbox
				// (its command left pid 1 alone), and the record waits for the next run.
				time.Sleep(500 * time.Millisecond)
				if _, err := os.Lstat(records[0]); err != nil {
					t.Fatalf("the record of a run killed with its keeper is gone: %v", err)
				}
			} else {
				waitFor("the keeper's audit", func() bool { _, err := os.Stat(logFile); return err == nil })
				said, _ := os.ReadFile(logFile)
				if !strings.Contains(string(said), filepath.Join(repo, "linked", ".git")+" -> ") {
					t.Errorf("the log does not say the move: %q", said)
				}
			}
			config, _ := os.ReadFile(filepath.Join(repo, "store", "linked.git", "config"))
			if !strings.Contains(string(config), pwned) {
				t.Fatalf("the command did not arm the config, so the test proves nothing: %s", config)
			}
			if withKeeper {
				// The next run does the audit first, and goes no further: its policy was
				// resolved on the project as the killed run left it.
				got := binaryRun(t, environ, "run", "--workdir-mode", "direct", "--workdir", repo, "--", "true")
				if got.status != 125 || !strings.Contains(got.stderr, "the audit was done now and moved aside "+filepath.Join(repo, "linked", ".git")) || !strings.Contains(got.stderr, "run it again") {
					t.Errorf("the run after a kill with the keeper: status %d %q", got.status, got.stderr)
				}
			}
			// The next run on the project says it, once.
			for i, want := range []bool{true, false} {
				got := binaryRun(t, environ, "run", "--workdir-mode", "direct", "--workdir", repo, "--", "true")
				if said := strings.Contains(got.stderr, "killed before its audit; the audit was done since") && strings.Contains(got.stderr, filepath.Join(repo, "linked", ".git")+" -> "); got.status != 0 || said != want {
					t.Errorf("run %d after: status %d, said %v (want %v): %q", i+1, got.status, said, want, got.stderr)
				}
			}
			if _, err := os.Lstat(filepath.Join(repo, "linked", ".git")); err == nil {
				t.Error("linked/.git, armed by a killed run, was not moved aside")
			}
			if _, err := os.Lstat(records[0]); err == nil {
				t.Errorf("the pending record %s was left", records[0])
			}
			out, err := hostGit(filepath.Join(repo, "linked"), "status").CombinedOutput()
			t.Logf("host git status in linked: %v %s", err, out)
			if _, err := os.Stat(pwned); err == nil {
				t.Fatal("the host's git ran the killed run's code")
			}
		})
	}
}

// TestAttackCommitModeRunsDoNotOverlap: a second --git commit run on a project while
// one goes on, or on a project nested in it, is refused: its command could rename the
// first's quarantine back after that audit, and its own inventory, taken while the plant
// was there, would keep it (the host's git status then ran the first command's
// fsmonitor). A readonly run, and a commit-mode run on a project beside it, go on.
func TestAttackCommitModeRunsDoNotOverlap(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	repo := gitRepo(t)
	environ, _ := attackEnv(t, bwrap)
	first := exec.Command(builtBinary, "run", "--git", "commit", "--workdir-mode", "direct", "--workdir", repo, "--", "sh", "-c", "touch started && sleep 60")
	first.Env = environ
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { first.Process.Kill(); first.Wait() }()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(repo, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first run's command never started")
		}
	}
	// The same project, and one nested in it (a submodule's tree is written by both).
	nested := filepath.Join(repo, "sub")
	if out, err := hostGit(repo, "init", "-q", "sub").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if out, err := hostGit(nested, "commit", "-q", "--allow-empty", "-m", "init").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	for _, workdir := range []string{repo, nested} {
		got := binaryRun(t, environ, "run", "--git", "commit", "--workdir-mode", "direct", "--workdir", workdir, "--", "touch", "second")
		if got.status != 125 || !strings.Contains(got.stderr, "another --git commit run is under way on this project, or on one it lies in") {
			t.Errorf("a second commit-mode run in %s: status %d %q", workdir, got.status, got.stderr)
		}
		if _, err := os.Stat(filepath.Join(workdir, "second")); err == nil {
			t.Errorf("the second commit-mode run's command ran in %s", workdir)
		}
	}
	// A project beside it is no business of the first run's.
	beside := gitRepo(t)
	if got := binaryRun(t, environ, "run", "--git", "commit", "--workdir-mode", "direct", "--workdir", beside, "--", "true"); got.status != 0 {
		t.Errorf("a commit-mode run on a project beside it: status %d %q", got.status, got.stderr)
	}
	if got := binaryRun(t, environ, "run", "--workdir-mode", "direct", "--workdir", repo, "--", "true"); got.status != 0 {
		t.Errorf("a readonly run beside it: status %d %q", got.status, got.stderr)
	}
}

// childNamed is the pid of parent's child whose comm is name; 0 for none.
func childNamed(parent int, name string) int {
	entries, _ := os.ReadDir("/proc")
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		open, close := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
		if open < 0 || close < open {
			continue
		}
		fields := strings.Fields(string(stat[close+1:]))
		if string(stat[open+1:close]) == name && len(fields) > 1 && fields[1] == strconv.Itoa(parent) {
			return pid
		}
	}
	return 0
}

// TestAttackCommitModeCannotMakeTheTopABareRepository: a commit-mode command spoils the
// top .git's HEAD, so that git no longer takes .git for the repository and looks at the
// work tree itself, where it planted a bare repository's HEAD, objects/, refs/ and a
// config with a fsmonitor. The audit takes the planted HEAD away and says the top's is
// broken; the host's git status at the top runs nothing of the command's.
func TestAttackCommitModeCannotMakeTheTopABareRepository(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	repo := gitRepo(t)
	environ, _ := attackEnv(t, bwrap)
	pwned := filepath.Join(livetest.TempDir(t), "pwned")
	script := strings.Join([]string{
		`printf 'garbage\n' > .git/HEAD`,
		`mkdir -p objects refs`,
		`printf 'ref: refs/heads/master\n' > HEAD`,
		`printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = touch ` + pwned + `\n' > config`,
	}, " && ")
	got := binaryRun(t, environ, "run", "--git", "commit", "--workdir-mode", "direct", "--workdir", repo, "--", "sh", "-c", script)
	if !strings.Contains(got.stderr, filepath.Join(repo, "HEAD")+" -> ") || !strings.Contains(got.stderr, "HEAD is no longer one git accepts") {
		t.Errorf("the planted HEAD was not taken away, or the broken one not said: status %d %q", got.status, got.stderr)
	}
	for _, args := range [][]string{{"status"}, {"diff"}} {
		out, err := hostGit(repo, args...).CombinedOutput()
		t.Logf("host git %v: %v %s", args, err, out)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatalf("the host's git ran the command's code")
	}
}

// TestAttackCommitModeCannotFillAnInclude: the top repository's config includes a file
// beside it that does not exist (include.path = config.local); a commit-mode command,
// which may write .git, makes it with a fsmonitor. The audit moves it aside, and the
// host's git status runs nothing of the command's.
func TestAttackCommitModeCannotFillAnInclude(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	repo := gitRepo(t)
	if out, err := hostGit(repo, "config", "include.path", "config.local").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	environ, _ := attackEnv(t, bwrap)
	pwned := filepath.Join(livetest.TempDir(t), "pwned")
	script := `printf '[core]\n\tfsmonitor = touch ` + pwned + `\n' > .git/config.local && ` + gitIdentity + ` commit -q --allow-empty -m inside`
	got := binaryRun(t, environ, "run", "--git", "commit", "--workdir-mode", "direct", "--workdir", repo, "--", "sh", "-c", script)
	if got.status != 0 || !strings.Contains(got.stderr, filepath.Join(repo, ".git", "config.local")+" -> ") {
		t.Errorf("the include the command made was not moved aside: status %d %q", got.status, got.stderr)
	}
	out, err := hostGit(repo, "status").CombinedOutput()
	t.Logf("host git status: %v %s", err, out)
	if _, err := os.Stat(pwned); err == nil {
		t.Fatalf("the host's git ran the command's code")
	}
	if log, _ := hostGit(repo, "log", "--format=%s", "-1").Output(); string(log) != "inside\n" {
		t.Errorf("the commit made inside: %q", log)
	}
}
