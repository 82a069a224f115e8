package gitmeta

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree makes the layout under root: "dir/" a directory, "a -> b" a symlink, anything
// else an empty file (with its directories).
func tree(t *testing.T, root string, layout ...string) {
	t.Helper()
	for _, entry := range layout {
		name, target, link := strings.Cut(entry, " -> ")
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case link:
			err = os.Symlink(target, path)
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(path, 0o755)
		default:
			err = os.WriteFile(path, nil, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestEntriesFollowTheGitdirsLinks: what a host git reads or runs from .git through a
// symlink into the project is protected as the file it lands on; what leads elsewhere
// adds nothing; a way the command could change, or a missing file it could create, is
// refused with the link named.
func TestEntriesFollowTheGitdirsLinks(t *testing.T) {
	cases := []struct {
		name   string
		layout []string
		want   []string // besides .git, relative to the project
		refuse string   // a part of the error, "" when none
	}{
		{name: "no links", layout: []string{".git/config", ".git/hooks/pre-commit.sample"}},
		{name: "config", layout: []string{"gitconfig", ".git/config -> ../gitconfig"}, want: []string{"gitconfig"}},
		{name: "config.worktree", layout: []string{"wt", ".git/config.worktree -> ../wt"}, want: []string{"wt"}},
		{name: "hooks directory and a hook in it",
			layout: []string{"scripts/pc", "githooks/pre-commit -> ../scripts/pc", ".git/hooks -> ../githooks"},
			want:   []string{"githooks", "scripts/pc"}},
		{name: "one hook", layout: []string{"tools/lint", ".git/hooks/pre-push -> ../../tools/lint"}, want: []string{"tools/lint"}},
		{name: "a hook leading outside", layout: []string{".git/hooks/pre-push -> /bin/true"}},
		{name: "through a link in the project",
			layout: []string{"real/pc", "via -> real", ".git/hooks/pre-commit -> ../../via/pc"},
			refuse: "is reached through"},
		{name: "a hook leading to nothing", layout: []string{".git/hooks/pre-commit -> ../../scripts/pc"}, refuse: "does not exist"},
		{name: "a hard-linked config", layout: []string{"gitconfig", ".git/config -> ../gitconfig"}, refuse: "hard links"},
		{name: "a hook with a second name", layout: []string{"scripts/pc", ".git/hooks/"}, refuse: "hard links"},
		{name: "commondir inside the project",
			layout: []string{"shared/config", "shared/hooks/", ".git/HEAD"},
			want:   []string{"shared"}},
		{name: "commondir whose hooks lead further",
			layout: []string{"shared/config", "shared/hooks -> ../hooks-src", "hooks-src/", ".git/HEAD"},
			want:   []string{"shared", "hooks-src"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			project := t.TempDir()
			tree(t, project, tc.layout...)
			if strings.HasPrefix(tc.name, "commondir") {
				os.WriteFile(filepath.Join(project, ".git", "commondir"), []byte("../shared\n"), 0o644)
			}
			if strings.HasPrefix(tc.name, "a hard-linked") {
				os.Link(filepath.Join(project, "gitconfig"), filepath.Join(project, "second-name"))
			}
			if strings.HasPrefix(tc.name, "a hook with") {
				os.Link(filepath.Join(project, "scripts", "pc"), filepath.Join(project, ".git", "hooks", "pre-commit"))
			}
			got, err := Entries(project, nil)
			if tc.refuse != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refuse) {
					t.Fatalf("Entries = %v, %v; want an error saying %q", got, err, tc.refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []string{filepath.Join(project, ".git")}
			for _, rel := range tc.want {
				want = append(want, filepath.Join(project, rel))
			}
			if !slices.Equal(got, want) {
				t.Errorf("Entries = %v, want %v", got, want)
			}
		})
	}
}

// TestEntriesProtectASubmodulesGitdirInTheProject: a submodule whose gitfile names a
// gitdir inside the project, outside .git, gets it protected, and what its hooks lead to;
// so does one whose gitdir under .git/modules is a symlink out to the project.
func TestEntriesProtectASubmodulesGitdirInTheProject(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	project := t.TempDir()
	git := exec.Command(gitPath, "-C", project, "init", "-q")
	var updates []*exec.Cmd
	for _, sub := range []string{"lib", "vendored"} {
		updates = append(updates, exec.Command(gitPath, "-C", project, "update-index", "--add", "--cacheinfo", "160000,1111111111111111111111111111111111111111,"+sub))
	}
	for _, cmd := range append([]*exec.Cmd{git}, updates...) {
		cmd.Env = []string{"HOME=" + project, "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
		}
	}
	tree(t, project, "lib/", "lib-git/config", "lib-tools/hook", "lib-git/hooks/post-checkout -> ../../lib-tools/hook",
		"vendored/", "vendored-git/config", ".git/modules/vendored -> ../../vendored-git")
	os.WriteFile(filepath.Join(project, "lib", ".git"), []byte("gitdir: ../lib-git\n"), 0o644)
	os.WriteFile(filepath.Join(project, "vendored", ".git"), []byte("gitdir: ../.git/modules/vendored\n"), 0o644)
	got, err := Entries(project, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".git", "lib/.git", "vendored/.git", "lib-git", "lib-tools/hook", "vendored-git"}
	for i := range want {
		want[i] = filepath.Join(project, want[i])
	}
	if !slices.Equal(got, want) {
		t.Errorf("Entries = %v, want %v", got, want)
	}
}

// TestLinkedIntoFromAGitdirOutside: an enclosing repository's .git, outside the workdir,
// whose hooks lead into it.
func TestLinkedIntoFromAGitdirOutside(t *testing.T) {
	repo := t.TempDir()
	tree(t, repo, ".git/config", "tools/hooks/pre-commit", ".git/hooks -> ../tools/hooks")
	workdir := filepath.Join(repo, "tools")
	got, err := LinkedInto(workdir, filepath.Join(repo, ".git"), nil)
	if err != nil || !slices.Equal(got, []string{filepath.Join(workdir, "hooks")}) {
		t.Errorf("LinkedInto = %v, %v", got, err)
	}
	if got, err := LinkedInto(filepath.Join(repo, "other"), filepath.Join(repo, ".git"), nil); err != nil || len(got) > 0 {
		t.Errorf("for a workdir the links do not reach: %v, %v", got, err)
	}
}

// TestFollowReportsEveryLink: the links on the way, in order, and a missing end by name.
func TestFollowReportsEveryLink(t *testing.T) {
	root := t.TempDir()
	tree(t, root, "d/f", "a -> d", "b -> a/f", "c -> nowhere/x")
	real, links, err := follow(filepath.Join(root, "b"))
	if err != nil || real != filepath.Join(root, "d", "f") || !slices.Equal(links, []string{filepath.Join(root, "b"), filepath.Join(root, "a")}) {
		t.Errorf("follow(b) = %q %v %v", real, links, err)
	}
	_, _, err = follow(filepath.Join(root, "c"))
	var missing *missingError
	if !errors.As(err, &missing) || missing.path != filepath.Join(root, "nowhere", "x") {
		t.Errorf("follow(c): %v", err)
	}
}

// TestEntriesWalkNestedSubmodules: a submodule's own submodules, at every depth, are
// protected like the top's (a host git at the top enters them too), as real git lays
// them out (gitfiles into .git/modules/<a>/modules/<b>).
func TestEntriesWalkNestedSubmodules(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	git := func(dir string, args ...string) {
		cmd := exec.Command(gitPath, append([]string{"-C", dir, "-c", "protocol.file.allow=always", "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Env = []string{"HOME=" + root, "GIT_CONFIG_NOSYSTEM=1", "PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for _, name := range []string{"inner", "mid", "top"} {
		os.Mkdir(filepath.Join(root, name), 0o755)
		git(filepath.Join(root, name), "init", "-q")
		git(filepath.Join(root, name), "commit", "-q", "--allow-empty", "-m", name)
	}
	git(filepath.Join(root, "mid"), "submodule", "add", "-q", filepath.Join(root, "inner"), "inner")
	git(filepath.Join(root, "mid"), "commit", "-qm", "inner")
	top := filepath.Join(root, "top")
	git(top, "submodule", "add", "-q", filepath.Join(root, "mid"), "libs/mid")
	git(top, "commit", "-qm", "mid")
	git(top, "submodule", "update", "--init", "--recursive", "-q")
	got, err := Entries(top, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".git", "libs/mid/.git", "libs/mid/inner/.git"} {
		if !slices.Contains(got, filepath.Join(top, want)) {
			t.Errorf("Entries = %v, missing %s", got, want)
		}
	}
	// The same from a workdir below the top, as the enclosing repository's.
	workdir := filepath.Join(top, "libs")
	got, err = Submodules(workdir, top, filepath.Join(top, ".git"), nil, nil)
	if err != nil || !slices.Equal(got, []string{filepath.Join(workdir, "mid", ".git"), filepath.Join(workdir, "mid", "inner", ".git")}) {
		t.Errorf("Submodules below the top = %v, %v", got, err)
	}
}

// TestLinkedIntoJoinsCommondirWhereTheGitdirIs: git joins a relative commondir to the
// gitdir's real place, not to the link that leads there.
func TestLinkedIntoJoinsCommondirWhereTheGitdirIs(t *testing.T) {
	project := t.TempDir()
	tree(t, project, ".git/HEAD", "store/sub-git/HEAD", "shared/config", ".git/modules/sub -> ../../store/sub-git")
	os.WriteFile(filepath.Join(project, "store", "sub-git", "commondir"), []byte("../../shared\n"), 0o644)
	got, err := LinkedInto(project, filepath.Join(project, ".git", "modules", "sub"), []string{filepath.Join(project, ".git")})
	want := []string{filepath.Join(project, "store", "sub-git"), filepath.Join(project, "shared")}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("LinkedInto = %v, %v; want %v", got, err, want)
	}
}

// TestLinkedIntoRefusesTheWorkdirAsATarget: a hooks directory that is the workdir itself
// cannot be protected inside it; the run is refused with the way out.
func TestLinkedIntoRefusesTheWorkdirAsATarget(t *testing.T) {
	repo := t.TempDir()
	tree(t, repo, ".git/config", "tools/hooks/pre-commit", ".git/hooks -> ../tools/hooks")
	_, err := LinkedInto(filepath.Join(repo, "tools", "hooks"), filepath.Join(repo, ".git"), nil)
	if err == nil || !strings.Contains(err.Error(), "the workdir itself") {
		t.Errorf("LinkedInto: %v", err)
	}
}
