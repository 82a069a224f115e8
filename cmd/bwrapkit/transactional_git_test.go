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
				gitconfig := filepath.Join(home, ".gitconfig")
				if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = t\n\temail = t@t\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				os.Chown(gitconfig, uidOf(prefix), uidOf(prefix))
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
