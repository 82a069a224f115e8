package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestLiveWorkTreeFilesGitConfigNamesAreGuarded: the files the host's git reads or runs
// by itself because the repository's config names them inside the work tree never take
// a command's change: the hooks directory of a workdir that is a subdirectory of the
// repository (a monorepo's `core.hooksPath = frontend/.husky/_`, relative to the
// repository's top, not the workdir) and a config file `include.path` names there (a
// project's `../.gitconfig`: any core.fsmonitor written there runs at the host's next
// `git status`). Judged by the host's git, as the user, with a canary in each.
func TestLiveWorkTreeFilesGitConfigNamesAreGuarded(t *testing.T) {
	for _, bwrap := range livetest.Bwraps(t) {
		if !hasOverlay(bwrap.Path) {
			continue
		}
		t.Run(bwrap.Name, func(t *testing.T) {
			asUsers(t, func(t *testing.T, prefix []string, project, home string) {
				git := userGit(t, prefix, project, home)
				frontend := filepath.Join(project, "frontend")
				git("init", "-q")
				git("config", "core.hooksPath", "frontend/.husky/_")
				git("config", "include.path", "../.gitconfig.local")
				argv := append(append([]string{}, prefix...), "sh", "-c", "mkdir frontend && echo 1 > frontend/app")
				setup := exec.Command(argv[0], argv[1:]...)
				setup.Dir = project
				if out, err := setup.CombinedOutput(); err != nil {
					t.Fatalf("setup: %v\n%s", err, out)
				}
				git("add", "frontend/app")
				git("commit", "-qm", "init")

				hookCanary, monitorCanary := filepath.Join(home, "hook-ran"), filepath.Join(home, "fsmonitor-ran")
				plantHook := "mkdir -p .husky/_ && printf '#!/bin/sh\\ntouch " + hookCanary + "\\n' > .husky/_/pre-commit && chmod 755 .husky/_/pre-commit && echo 2 > app"
				status, _, stderr := runIn(t, prefix, project, home, "run", "--workdir", frontend, "--bwrap", bwrap.Path, "--", "sh", "-c", plantHook)
				if status != 0 || !strings.Contains(stderr, "refused .husky: protected") {
					t.Errorf("a hook planted from the subdirectory workdir: exit %d\n%s", status, stderr)
				}
				plantConfig := `printf '[core]\n\tfsmonitor = "touch ` + monitorCanary + `; false"\n' > .gitconfig.local`
				status, _, stderr = runIn(t, prefix, project, home, "run", "--workdir", project, "--bwrap", bwrap.Path, "--", "sh", "-c", plantConfig)
				if status != 0 || !strings.Contains(stderr, "refused .gitconfig.local: protected") {
					t.Errorf("a config file include.path names: exit %d\n%s", status, stderr)
				}

				git("status", "--short")
				git("commit", "-qam", "second")
				for _, canary := range []string{hookCanary, monitorCanary} {
					if _, err := os.Lstat(canary); err == nil {
						t.Errorf("the host's git ran what the command planted (%s)", filepath.Base(canary))
					}
				}
				if out := git("show", "--stat", "HEAD"); !strings.Contains(out, "frontend/app") {
					t.Errorf("the honest change did not land and commit:\n%s", out)
				}
			})
		})
	}
}
