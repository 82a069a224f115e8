package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestLiveTransactionalGitCommit: `git commit` with --git commit lands (the host's git
// sees the commit and a clean tree); a gitlink slipped into the index, a split index and
// a planted hook do not, and the host's git status runs no fsmonitor of the command's.
func TestLiveTransactionalGitCommit(t *testing.T) {
	for _, bwrap := range livetest.Bwraps(t) {
		if !hasOverlay(bwrap.Path) {
			continue
		}
		t.Run(bwrap.Name, func(t *testing.T) {
			asUsers(t, func(t *testing.T, prefix []string, project, home string) {
				hostGit := userGit(t, prefix, project, home)
				committer(t, prefix, home)
				hostGit("init", "-q", "-b", "main")
				if err := os.WriteFile(filepath.Join(project, "a"), []byte("a\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				os.Chown(filepath.Join(project, "a"), uidOf(prefix), uidOf(prefix))
				hostGit("add", "a")
				hostGit("commit", "-qm", "first")

				status, _, stderr := runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--git", "commit", "--", "sh", "-c", "echo b > b && git add b && git commit -qm second")
				if status != 0 {
					t.Fatalf("git commit: exit %d\n%s", status, stderr)
				}
				if log := hostGit("log", "--format=%s"); log != "second\nfirst\n" {
					t.Errorf("the host's git log after the commit: %q\n%s", log, stderr)
				}
				if st := hostGit("status", "--porcelain"); st != "" {
					t.Errorf("the host's git status is not clean: %q\n%s", st, stderr)
				}
				if strings.Contains(stderr, "refused") {
					t.Errorf("a plain commit had refusals:\n%s", stderr)
				}

				canary := filepath.Join(home, "canary")
				attack := `set -e
mkdir -p sub && cd sub && git init -q && git config core.fsmonitor "touch ` + canary + `; false" && echo x > x && git add x && git -c user.name=t -c user.email=t@t commit -qm sub && cd ..
git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),sub
git commit -qm gitlink
printf '#!/bin/sh\ntouch ` + canary + `\n' > .git/hooks/post-checkout 2>/dev/null || true
git -c core.splitIndex=true update-index --split-index
`
				status, _, stderr = runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--git", "commit", "--report", filepath.Join(home, "r.json"), "--", "sh", "-c", attack)
				if status != 0 {
					t.Fatalf("the attack run: exit %d\n%s", status, stderr)
				}
				for _, want := range []string{"refused .git/index", "refused sub/.git"} {
					if !strings.Contains(stderr, want) {
						t.Errorf("stderr does not say %q:\n%s", want, stderr)
					}
				}
				if _, err := os.Lstat(filepath.Join(project, "sub", ".git")); err == nil {
					t.Error("the nested repository reached the project")
				}
				// The host's git, with the caller's environment, at the top and in sub.
				for _, dir := range []string{project, filepath.Join(project, "sub")} {
					argv := append(append([]string{}, prefix...), "env", "-i", "HOME="+home, newcomerPATH, "git", "-C", dir, "status")
					_ = exec.Command(argv[0], argv[1:]...).Run()
				}
				if _, err := os.Lstat(canary); err == nil {
					t.Error("a host git status ran the command's fsmonitor or hook")
				}
				if index, err := os.ReadFile(filepath.Join(project, ".git", "index")); err == nil && strings.Contains(string(index), "link") && strings.Contains(stderr, "split") {
					t.Log("index:", len(index))
				}
				if matches, _ := filepath.Glob(filepath.Join(project, ".git", "sharedindex.*")); len(matches) > 0 {
					t.Errorf("a shared index reached the project: %v", matches)
				}
			})
		})
	}
}

func uidOf(prefix []string) int {
	if len(prefix) > 0 {
		return 65534
	}
	return os.Geteuid()
}

// TestLiveGitCommitNeedsNoTempDir: commit mode verifies the commit's new objects through a
// directory of its own in the run's layer directory, not in $TMPDIR: with /tmp at 0755 (a
// machine image seen so) or a TMPDIR that is gone, every commit was refused.
func TestLiveGitCommitNeedsNoTempDir(t *testing.T) {
	overlayAsUsers(t, func(t *testing.T, bwrap livetest.Bwrap, prefix []string, project, home string) {
		hostGit := userGit(t, prefix, project, home)
		committer(t, prefix, home)
		hostGit("init", "-q", "-b", "main")
		hostGit("commit", "-q", "--allow-empty", "-m", "first")
		gone := []string{"TMPDIR=" + filepath.Join(home, "no-such-tmp")}
		status, _, stderr := runInEnv(t, prefix, project, home, gone, "run", "--bwrap", bwrap.Path, "--git", "commit", "--", "sh", "-c", "echo b > b && git add b && git commit -qm second")
		if status != 0 {
			t.Fatalf("git commit with TMPDIR gone: exit %d\n%s", status, stderr)
		}
		if log := hostGit("log", "--format=%s"); log != "second\nfirst\n" {
			t.Errorf("the host's git log after a commit with TMPDIR gone: %q\n%s", log, stderr)
		}
	})
}

// TestLiveCommitsKeepTheGuardedPaths: with --git commit, a command writes commits that
// carry what the work tree refuses, made with git's plumbing so that the work tree's own
// refused change does not matter, in a husky-style project (core.hooksPath .husky/_, a
// directory that ignores itself): a new hook on one branch, .husky swapped for a symlink
// to a hooks directory of the command's on another, a changed hook and an .npmrc on the
// current one. No branch moves, and the host's git checking each branch out, restoring and
// committing runs nothing the command wrote; a commit of an ordinary file still lands.
func TestLiveCommitsKeepTheGuardedPaths(t *testing.T) {
	overlayAsUsers(t, func(t *testing.T, bwrap livetest.Bwrap, prefix []string, project, home string) {
		hostGit := userGit(t, prefix, project, home)
		committer(t, prefix, home)
		hostGit("init", "-q", "-b", "main")
		hostGit("config", "core.hooksPath", ".husky/_")
		asUser(t, prefix, project, `mkdir -p .husky/_ && echo '*' > .husky/_/.gitignore && printf '#!/bin/sh\ntrue\n' > .husky/_/pre-commit && chmod 755 .husky/_/pre-commit && echo husky > .husky/README && echo a > a`)
		hostGit("add", ".")
		hostGit("commit", "-qm", "first")
		hostGit("branch", "dev")
		hostGit("branch", "feat")

		canary := filepath.Join(home, "hook-ran")
		payload := `$(printf '#!/bin/sh\ntouch ` + canary + `\n' | git hash-object -w --stdin)`
		// plant makes a commit on branch from its tree with the given index changes, by
		// plumbing alone (no work tree, no hook), and moves the branch to it.
		plant := func(branch string, changes ...string) string {
			script := `export GIT_INDEX_FILE=$(mktemp) && git read-tree ` + branch
			for _, change := range changes {
				script += " && git update-index " + change
			}
			return script + ` && c=$(git commit-tree -p ` + branch + ` -m planted $(git write-tree)) && git update-ref refs/heads/` + branch + ` $c`
		}
		link := `$(printf tools/hk | git hash-object -w --stdin)`
		script := strings.Join([]string{
			plant("dev", "--add --cacheinfo 100755,"+payload+",.husky/_/post-checkout"),
			plant("feat", "--force-remove .husky/README", "--add --cacheinfo 120000,"+link+",.husky", "--add --cacheinfo 100755,"+payload+",tools/hk/_/post-checkout"),
			plant("main", "--add --cacheinfo 100755,"+payload+",.husky/_/pre-commit", "--add --cacheinfo 100644,$(echo script-shell=./x | git hash-object -w --stdin),.npmrc"),
		}, " && ")
		before := hostGit("rev-parse", "main", "dev", "feat")
		status, _, stderr := runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--git", "commit", "--", "sh", "-c", script)
		for _, branch := range []string{"dev", "feat", "main"} {
			if !strings.Contains(stderr, "refused .git/refs/heads/"+branch) {
				t.Errorf("the planted commit on %s was not refused: exit %d\n%s", branch, status, stderr)
			}
		}
		if after := hostGit("rev-parse", "main", "dev", "feat"); after != before {
			t.Errorf("a branch moved: %q, was %q", after, before)
		}
		for _, branch := range []string{"dev", "feat", "main"} {
			hostGit("checkout", "-q", branch)
		}
		hostGit("restore", ".")
		hostGit("commit", "-q", "--allow-empty", "-m", "on the host")
		if _, err := os.Lstat(canary); err == nil {
			t.Error("the host's git ran a hook the command committed")
		}
		if _, err := os.Lstat(filepath.Join(project, ".npmrc")); err == nil {
			t.Error("a committed .npmrc reached the work tree")
		}

		// The hook carried in an earlier commit only, neither the tip's tree nor its own
		// change touching it: the user's `git reset --hard HEAD~2` would bring it back.
		carried := "printf '#!/bin/sh\\ntouch " + canary + "\\n' > .husky/_/pre-commit && git add -f .husky/_/pre-commit && git commit -q --no-verify -m wip" +
			" && git rm -q --cached .husky/_/pre-commit && git commit -q --no-verify -m unwip" +
			" && echo c > c && git add c && git commit -q --no-verify -m feature"
		before = hostGit("rev-parse", "main")
		status, _, stderr = runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--git", "commit", "--", "sh", "-c", carried)
		if !strings.Contains(stderr, "refused .git/refs/heads/main") || !strings.Contains(stderr, "refused .git/logs/HEAD") {
			t.Errorf("a hook carried in an earlier commit: exit %d\n%s", status, stderr)
		}
		if after := hostGit("rev-parse", "main"); after != before {
			t.Errorf("main moved to a history carrying the hook: %q, was %q", after, before)
		}

		status, _, stderr = runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--git", "commit", "--", "sh", "-c", "echo b > b && git add b && git commit -qm honest")
		if status != 0 || strings.Contains(stderr, "refused") {
			t.Errorf("an honest commit: exit %d\n%s", status, stderr)
		}
		if log := hostGit("log", "-1", "--format=%s"); log != "honest\n" {
			t.Errorf("the honest commit did not land: %q\n%s", log, stderr)
		}
	})
}

// TestLiveCommitModeHistoryAndBranches: with --git commit, what git brings back from a
// reflog's message (`git checkout -` takes the commit after "moving from") is checked like
// a branch; a branch may not name a tree; git branch -D lands, but git gc's packing of the
// refs does not delete the branches it packed.
func TestLiveCommitModeHistoryAndBranches(t *testing.T) {
	overlayAsUsers(t, func(t *testing.T, bwrap livetest.Bwrap, prefix []string, project, home string) {
		hostGit := userGit(t, prefix, project, home)
		committer(t, prefix, home)
		hostGit("init", "-q", "-b", "main")
		hostGit("config", "core.hooksPath", ".githooks")
		hostGit("commit", "-q", "--allow-empty", "-m", "first")
		hostGit("branch", "doomed")
		hostGit("branch", "kept")
		canary := filepath.Join(home, "hook-ran")
		hooked := `export GIT_INDEX_FILE=$(mktemp) && git read-tree HEAD && git update-index --add --cacheinfo 100755,$(printf '#!/bin/sh\ntouch ` + canary + `\n' | git hash-object -w --stdin),.githooks/post-checkout`
		script := strings.Join([]string{
			hooked,
			`e=$(git commit-tree -p HEAD -m hidden $(git write-tree)) && n=$(git rev-parse HEAD)`,
			`printf '%s %s t <t@t> 1700000000 +0000\tcheckout: moving from %s to main\n' $n $n $e >> .git/logs/HEAD`,
			`git write-tree > .git/refs/heads/tree`,
			`unset GIT_INDEX_FILE && git branch -D -q doomed`,
		}, " && ")
		status, _, stderr := runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--git", "commit", "--", "sh", "-c", script)
		for _, refused := range []string{".git/logs/HEAD", ".git/refs/heads/tree"} {
			if !strings.Contains(stderr, "refused "+refused) {
				t.Errorf("%s landed: exit %d\n%s", refused, status, stderr)
			}
		}
		if strings.Contains(stderr, "refused .git/refs/heads/doomed") {
			t.Errorf("git branch -D was refused:\n%s", stderr)
		}
		if branches := hostGit("branch", "--format=%(refname:short)"); branches != "kept\nmain\n" {
			t.Errorf("the host's branches after branch -D: %q", branches)
		}
		// git gc packs the refs: the loose ones' deletion must not land without them.
		status, _, stderr = runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--git", "commit", "--", "git", "pack-refs", "--all")
		if !strings.Contains(stderr, "refused .git/refs/heads/kept") || !strings.Contains(stderr, "refused .git/refs/heads/main") {
			t.Errorf("the packed branches' deletion: exit %d\n%s", status, stderr)
		}
		if branches := hostGit("branch", "--format=%(refname:short)"); branches != "kept\nmain\n" {
			t.Errorf("the host's branches after pack-refs: %q", branches)
		}
		if _, err := os.Lstat(canary); err == nil {
			t.Error("a hook the command hid in history ran")
		}
	})
}

// committer gives the user (prefix) a git identity in home, so that git commit works
// inside the sandbox (which sees the caller's ~/.gitconfig identity) and on the host.
func committer(t *testing.T, prefix []string, home string) {
	t.Helper()
	gitconfig := filepath.Join(home, ".gitconfig")
	if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = t\n\temail = t@t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chown(gitconfig, uidOf(prefix), uidOf(prefix))
}

// asUser runs a setup script in project as the user (prefix), failing the test on an error.
func asUser(t *testing.T, prefix []string, project, script string) {
	t.Helper()
	argv := append(append([]string{}, prefix...), "sh", "-c", script)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = project
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
}
