package main

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	overlayAsUsers(t, func(t *testing.T, bwrap livetest.Bwrap, prefix []string, project, home string) {
		git := userGit(t, prefix, project, home)
		frontend := filepath.Join(project, "frontend")
		git("init", "-q")
		git("config", "core.hooksPath", "frontend/.husky/_")
		git("config", "include.path", "../.gitconfig.local")
		asUser(t, prefix, project, "mkdir frontend && echo 1 > frontend/app")
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
}

// TestLiveSubmodulesHooksPathIsGuarded: a submodule with husky set up inside it (its own
// config's core.hooksPath, relative to the submodule) never takes the command's hook,
// judged by the host's git committing in the submodule afterwards.
func TestLiveSubmodulesHooksPathIsGuarded(t *testing.T) {
	overlayAsUsers(t, func(t *testing.T, bwrap livetest.Bwrap, prefix []string, project, home string) {
		git := userGit(t, prefix, project, home)
		lib := filepath.Join(project, "lib-src")
		git("init", "-q", lib)
		git("-C", lib, "commit", "-q", "--allow-empty", "-m", "lib")
		git("init", "-q")
		git("-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "vendor/lib")
		git("commit", "-qm", "vendor lib")
		sub := filepath.Join(project, "vendor", "lib")
		git("-C", sub, "config", "core.hooksPath", ".husky/_")

		canary := filepath.Join(home, "submodule-hook-ran")
		plant := "mkdir -p vendor/lib/.husky/_ && printf '#!/bin/sh\\ntouch " + canary + "\\n' > vendor/lib/.husky/_/pre-commit && chmod 755 vendor/lib/.husky/_/pre-commit"
		status, _, stderr := runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--", "sh", "-c", plant)
		if status != 0 || !strings.Contains(stderr, "refused vendor/lib/.husky: protected") {
			t.Errorf("a hook planted in the submodule's hooks path: exit %d\n%s", status, stderr)
		}
		git("-C", sub, "commit", "-q", "--allow-empty", "-m", "in the submodule")
		if _, err := os.Lstat(canary); err == nil {
			t.Error("the host's git ran the hook the command planted in the submodule")
		}
	})
}

// TestLiveHuskysOwnHooksAreGuarded: in a husky 9 project (core.hooksPath .husky/_, whose
// shims run the user's .husky/pre-commit through husky's runner h), the command's change
// to .husky/pre-commit never lands, judged by the host's git commit afterwards.
func TestLiveHuskysOwnHooksAreGuarded(t *testing.T) {
	overlayAsUsers(t, func(t *testing.T, bwrap livetest.Bwrap, prefix []string, project, home string) {
		git := userGit(t, prefix, project, home)
		git("init", "-q")
		git("config", "core.hooksPath", ".husky/_")
		// husky 9's layout, as `husky` writes it: a runner, and a shim per hook.
		setup := strings.Join([]string{
			"mkdir -p .husky/_",
			`printf '#!/usr/bin/env sh\nhook=.husky/$(basename "$0")\n[ -f "$hook" ] && exec sh -e "$hook"\nexit 0\n' > .husky/_/h`,
			`printf '#!/usr/bin/env sh\n. "$(dirname "$0")/h"\n' > .husky/_/pre-commit && chmod 755 .husky/_/pre-commit`,
			"echo '*' > .husky/_/.gitignore && echo true > .husky/pre-commit",
		}, " && ")
		asUser(t, prefix, project, setup)
		git("add", ".husky/pre-commit")
		git("commit", "-qm", "husky")

		canary := filepath.Join(home, "husky-hook-ran")
		status, _, stderr := runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--", "sh", "-c", "echo 'touch "+canary+"' > .husky/pre-commit")
		if status != 0 || !strings.Contains(stderr, "refused .husky/pre-commit: protected") {
			t.Errorf("a change to husky's own hook: exit %d\n%s", status, stderr)
		}
		git("commit", "-q", "--allow-empty", "-m", "on the host")
		if _, err := os.Lstat(canary); err == nil {
			t.Error("the host's git ran the hook the command wrote, through husky's shim")
		}
	})
}

// TestLiveNpmSettingsNeverLand: a command writes an .npmrc whose script-shell is its own
// program, and a .gitignore that hides both from git; the host's npm install afterwards
// (a project whose only script is its own harmless install step) must run none of it.
// The transactional mode refuses the .npmrc (tool-config); the honest change lands.
func TestLiveNpmSettingsNeverLand(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatal("npm is not installed (scripts/ci-deps.sh installs it)")
	}
	overlayAsUsers(t, func(t *testing.T, bwrap livetest.Bwrap, prefix []string, project, home string) {
		asUser(t, prefix, project, `printf '{"name":"p","version":"1.0.0","scripts":{"install":"true"}}\n' > package.json`)
		canary := filepath.Join(home, "npm-shell-ran")
		plant := "printf '#!/bin/sh\\ntouch " + canary + "\\nexec /bin/sh \"$@\"\\n' > .sh-cache && chmod 755 .sh-cache" +
			" && echo script-shell=" + filepath.Join(project, ".sh-cache") + " > .npmrc" +
			" && printf '.gitignore\\n.npmrc\\n.sh-cache\\n' > .gitignore && echo honest > notes.txt"
		status, _, stderr := runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--", "sh", "-c", plant)
		if status != 0 || !strings.Contains(stderr, "refused .npmrc: tool-config") {
			t.Errorf("an .npmrc naming the command's shell: exit %d\n%s", status, stderr)
		}
		if _, err := os.Lstat(filepath.Join(project, "notes.txt")); err != nil {
			t.Errorf("the honest change did not land: %v", err)
		}
		argv := append(append([]string{}, prefix...), "env", "-i", "HOME="+home, newcomerPATH, "npm", "install", "--offline", "--no-audit", "--no-fund")
		npm := exec.Command(argv[0], argv[1:]...)
		npm.Dir = project
		if out, err := npm.CombinedOutput(); err != nil {
			t.Fatalf("the host's npm install: %v\n%s", err, out)
		}
		if _, err := os.Lstat(canary); err == nil {
			t.Error("the host's npm ran the shell the command named")
		}
	})
}

// TestLiveLinkedGitFilesAreProtected: a repository whose .git/config, hooks directory and
// a hook are symlinks to files kept with the sources (a common way to share hooks). The
// command writes each file a link leads to, and adds a hook through the linked hooks
// directory; in both workdir modes the files are read-only inside, so the host's git
// afterwards (a commit, a status) runs none of it. A link into the project that leads to
// nothing (a command could create the file) refuses the run before it starts.
func TestLiveLinkedGitFilesAreProtected(t *testing.T) {
	for _, bwrap := range livetest.Bwraps(t) {
		t.Run(bwrap.Name, func(t *testing.T) {
			asUsers(t, func(t *testing.T, prefix []string, project, home string) {
				git := userGit(t, prefix, project, home)
				git("init", "-q")
				git("commit", "-q", "--allow-empty", "-m", "init")
				setup := strings.Join([]string{
					"mkdir githooks scripts",
					`printf '#!/bin/sh\ntrue\n' > scripts/pre-commit && chmod 755 scripts/pre-commit`,
					"ln -s ../scripts/pre-commit githooks/pre-commit",
					"rm -rf .git/hooks && ln -s ../githooks .git/hooks",
					"mv .git/config gitconfig && ln -s ../gitconfig .git/config",
				}, " && ")
				asUser(t, prefix, project, setup)
				linked := func() []map[string]string {
					var all []map[string]string
					for _, name := range []string{"gitconfig", "githooks", "scripts"} {
						all = append(all, snapshot(t, filepath.Join(project, name)))
					}
					return all
				}
				before := linked()

				hook, commitHook, monitor := filepath.Join(home, "hook-ran"), filepath.Join(home, "post-commit-ran"), filepath.Join(home, "fsmonitor-ran")
				attempts := map[string]string{
					"the linked hook's script":             "echo 'touch " + hook + "' >> scripts/pre-commit",
					"a hook in the linked hooks directory": "printf '#!/bin/sh\\ntouch " + commitHook + "\\n' > githooks/post-commit && chmod 755 githooks/post-commit",
					"the linked config":                    `printf '[core]\n\tfsmonitor = "touch ` + monitor + `; false"\n' >> gitconfig`,
				}
				for what, script := range attempts {
					status, _, stderr := runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--", "sh", "-c", script)
					if status == 0 || !strings.Contains(stderr, "Read-only file system") {
						t.Errorf("%s: exit %d, want the write refused inside\n%s", what, status, stderr)
					}
				}
				git("status", "--short")
				git("commit", "-q", "--allow-empty", "-m", "after")
				for _, canary := range []string{hook, commitHook, monitor} {
					if _, err := os.Lstat(canary); err == nil {
						t.Errorf("the host's git ran what the command wrote (%s)", filepath.Base(canary))
					}
				}
				if after := linked(); !slices.EqualFunc(after, before, maps.Equal) {
					t.Errorf("what the links lead to changed:\n%v\nwas\n%v", after, before)
				}

				// A link to a hook that is not there: the command could create it.
				asUser(t, prefix, project, "ln -s ../scripts/missing githooks/pre-push")
				status, _, stderr := runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--", "true")
				if status != 2 || !strings.Contains(stderr, "scripts/missing") || !strings.Contains(stderr, "does not exist") {
					t.Errorf("a link to a missing hook inside the project: exit %d\n%s", status, stderr)
				}
			})
		})
	}
}
