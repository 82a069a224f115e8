package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestNewPolicyResolvesPaths(t *testing.T) {
	root := t.TempDir()
	real, _ := filepath.EvalSymlinks(root)
	project := filepath.Join(real, "project")
	os.MkdirAll(filepath.Join(project, "secrets"), 0o755)
	os.MkdirAll(filepath.Join(real, "tools"), 0o755)
	os.Symlink(project, filepath.Join(real, "link-to-project"))
	os.Symlink(filepath.Join(real, "tools"), filepath.Join(project, "escape"))

	policy, err := NewPolicy(Request{
		Workdir:  filepath.Join(real, "project", "..", "project"),
		ReadOnly: []string{filepath.Join(real, "tools")},
		Protect:  []string{"secrets"},
		Env:      []string{"A=1", "B=x=y"},
		PassEnv:  []string{"TOKEN", "UNSET"},
	}, []string{"TOKEN=t", "LANG=C.UTF-8", "LC_ALL=C", "SECRET=s"})
	if err != nil {
		t.Fatal(err)
	}
	if policy.Workdir != project {
		t.Errorf("workdir %s, want the resolved %s", policy.Workdir, project)
	}
	// (No .git here: nothing to add.)
	if !slices.Equal(policy.Protect, []string{filepath.Join(project, "secrets")}) {
		t.Errorf("protect %v", policy.Protect)
	}
	if !slices.Equal(policy.Env, []string{"A=1", "B=x=y", "TOKEN=t"}) {
		t.Errorf("env %v", policy.Env)
	}
	if !slices.Equal(policy.Host.Env, []string{"LANG=C.UTF-8", "LC_ALL=C"}) {
		t.Errorf("locale env %v", policy.Host.Env)
	}
}

func TestNewPolicyRefuses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	os.Symlink("/etc", filepath.Join(dir, "etc-link"))
	cases := []struct {
		name    string
		request Request
		field   string
	}{
		{"missing workdir", Request{Workdir: filepath.Join(dir, "nope")}, "workdir"},
		{"workdir is a file", Request{Workdir: file}, "workdir"},
		{"workdir is a link to /etc", Request{Workdir: filepath.Join(dir, "etc-link")}, "workdir"},
		{"workdir is /", Request{Workdir: "/"}, "workdir"},
		{"workdir is /usr/..", Request{Workdir: "/usr/.."}, "workdir"},
		{"missing read-only path", Request{Workdir: dir, ReadOnly: []string{filepath.Join(dir, "nope")}}, "ro"},
		{"absolute protect", Request{Workdir: dir, Protect: []string{"/etc"}}, "protect"},
		{"missing protect", Request{Workdir: dir, Protect: []string{"nope"}}, "protect"},
		{"env without =", Request{Workdir: dir, Env: []string{"NAME"}}, "env"},
		{"env empty name", Request{Workdir: dir, Env: []string{"=v"}}, "env"},
		{"pass-env bad name", Request{Workdir: dir, PassEnv: []string{"A=B"}}, "pass_env"},
		{"env value with a NUL", Request{Workdir: dir, Env: []string{"A=b\x00c"}}, "env"},
		{"read-only workdir", Request{Workdir: dir, ReadOnly: []string{dir}}, "ro"},
		{"read-only workdir by another name", Request{Workdir: dir, ReadOnly: []string{dir + "/."}}, "ro"},
		{"read-only HOME", Request{Workdir: dir, HomeDir: t.TempDir(), ReadOnly: []string{"$HOME"}}, "ro"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i, path := range c.request.ReadOnly {
				if path == "$HOME" {
					c.request.ReadOnly[i] = c.request.HomeDir
				}
			}
			_, err := NewPolicy(c.request, nil)
			var policyErr *PolicyError
			if !errors.As(err, &policyErr) || policyErr.Field != c.field {
				t.Fatalf("want a %s PolicyError, got %v", c.field, err)
			}
		})
	}
}

func TestNewPolicyProtectsGit(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	cases := []struct {
		name  string
		setup func(workdir string)
		want  []string // relative to the workdir
	}{
		{"no .git", func(string) {}, nil},
		{".git directory", func(w string) { os.Mkdir(filepath.Join(w, ".git"), 0o755) }, []string{".git"}},
		{".git file (worktree)", func(w string) {
			os.WriteFile(filepath.Join(w, ".git"), []byte("gitdir: /src/main/.git/worktrees/x"), 0o644)
		}, []string{".git"}},
		{".git file naming a gitdir inside", func(w string) {
			os.Mkdir(filepath.Join(w, ".realgit"), 0o755)
			os.WriteFile(filepath.Join(w, ".git"), []byte("gitdir: .realgit\n"), 0o644)
		}, []string{".git", ".realgit"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			workdir := filepath.Join(root, fmt.Sprint(i))
			os.Mkdir(workdir, 0o755)
			c.setup(workdir)
			policy, err := NewPolicy(Request{Workdir: workdir}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, rel := range c.want {
				want = append(want, filepath.Join(workdir, rel))
			}
			if !slices.Equal(policy.Protect, want) {
				t.Errorf("protect %v, want %v", policy.Protect, want)
			}
		})
	}
}

// TestEnclosingGitdirLinksAreProtected: a workdir below a repository whose .git/hooks
// leads into it (a monorepo's hooks kept in tools/, and the workdir tools/): the hooks
// directory is protected, since the host's next git at the top runs what is in it.
func TestEnclosingGitdirLinksAreProtected(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	repo, _ := filepath.EvalSymlinks(t.TempDir())
	workdir := filepath.Join(repo, "tools")
	os.MkdirAll(filepath.Join(workdir, "hooks"), 0o755)
	os.WriteFile(filepath.Join(workdir, "lint"), []byte("x"), 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "tools/lint"}} {
		cmd := exec.Command(gitPath, append([]string{"-C", repo}, args...)...)
		cmd.Env = []string{"HOME=" + repo, "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	os.RemoveAll(filepath.Join(repo, ".git", "hooks"))
	os.Symlink("../tools/hooks", filepath.Join(repo, ".git", "hooks"))
	policy, err := NewPolicy(Request{Workdir: workdir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(policy.Protect, []string{filepath.Join(workdir, "hooks")}) || !slices.Contains(policy.ReadOnly, filepath.Join(repo, ".git")) {
		t.Errorf("protect %v, read-only %v", policy.Protect, policy.ReadOnly)
	}
}

// TestNewPolicyRefusesGitAndProtectSymlinks: a symlinked .git, or a protected path that
// is or passes through a symlink, lives in the writable workdir: a command could retarget
// the link (.git -> /etc planted by an earlier run, cfg -> cfg-real) and a later host git
// or reader would follow it. These are refused, never bound.
func TestNewPolicyRefusesGitAndProtectSymlinks(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	cases := []struct {
		name    string
		setup   func(workdir string)
		protect []string
	}{
		{".git link inside", func(w string) {
			os.Mkdir(filepath.Join(w, "real-git"), 0o755)
			os.Symlink("real-git", filepath.Join(w, ".git"))
		}, nil},
		{".git link out", func(w string) { os.Symlink("/etc", filepath.Join(w, ".git")) }, nil},
		{".git dangling link", func(w string) { os.Symlink("/nowhere", filepath.Join(w, ".git")) }, nil},
		{"protected symlink", func(w string) {
			os.WriteFile(filepath.Join(w, "cfg-real"), nil, 0o644)
			os.Symlink("cfg-real", filepath.Join(w, "cfg"))
		}, []string{"cfg"}},
		{"protected path through a symlinked parent", func(w string) {
			os.MkdirAll(filepath.Join(w, "real", "workflows"), 0o755)
			os.Symlink("real", filepath.Join(w, ".github"))
		}, []string{".github/workflows"}},
		{"protected link out of the workdir", func(w string) { os.Symlink("/etc", filepath.Join(w, "escape")) }, []string{"escape"}},
		{"protect the workdir itself", func(string) {}, []string{"."}},
		{"protected file with a second name", func(w string) {
			os.WriteFile(filepath.Join(w, "ci.yml"), []byte("on: push"), 0o644)
			os.Link(filepath.Join(w, "ci.yml"), filepath.Join(w, ".x"))
		}, []string{"ci.yml"}},
		{".git file naming a missing gitdir inside", func(w string) { os.WriteFile(filepath.Join(w, ".git"), []byte("gitdir: later"), 0o644) }, nil},
		{"protect above the workdir", func(string) {}, []string{"../x"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			workdir := filepath.Join(root, fmt.Sprint(i))
			os.Mkdir(workdir, 0o755)
			c.setup(workdir)
			_, err := NewPolicy(Request{Workdir: workdir, Protect: c.protect}, nil)
			var policyErr *PolicyError
			if !errors.As(err, &policyErr) {
				t.Fatalf("want a PolicyError, got %v", err)
			}
		})
	}
}

// TestNewPolicyRefusesPlantedLinks: an earlier run with workdir P can leave `P/sub ->
// somewhere`; a later --workdir or --rw naming P/sub must not bind the target.
func TestNewPolicyRefusesPlantedLinks(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	target := filepath.Join(root, "victim")
	project := filepath.Join(root, "project")
	os.MkdirAll(target, 0o755)
	os.MkdirAll(project, 0o755)
	os.Symlink(target, filepath.Join(project, "sub"))
	for _, request := range []Request{
		{Workdir: filepath.Join(project, "sub")},
		{Workdir: project, ReadWrite: []string{filepath.Join(project, "sub")}},
	} {
		_, err := NewPolicy(request, nil)
		var policyErr *PolicyError
		if !errors.As(err, &policyErr) || !strings.Contains(err.Error(), "passes through the symlink") {
			t.Errorf("%+v: %v, want a refusal naming the link", request, err)
		}
	}
	if _, err := NewPolicy(Request{Workdir: target}, nil); err != nil {
		t.Errorf("the target named itself: %v", err)
	}
}

func TestParsePolicyFileRefusesRepeatedKeys(t *testing.T) {
	for _, doc := range []string{
		`{"schema":"bwrapkit.policy/v1","ro":["/a"],"ro":["/b"]}`,
		`{"schema":"bwrapkit.policy/v1","net":true,"NET":false}`,
		`{"schema":"bwrapkit.policy/v1","schema":"bwrapkit.policy/v1"}`,
		"{\"schema\":\"bwrapkit.policy/v1\",\"\u017fchema\":\"bwrapkit.policy/v1\"}", // long s: json's fold matches it to schema
	} {
		_, err := ParsePolicyFile([]byte(doc))
		var policyErr *PolicyError
		if !errors.As(err, &policyErr) || !strings.Contains(policyErr.Reason, "twice") {
			t.Errorf("%s: want a refusal naming the repeated key, got %v", doc, err)
		}
	}
	if _, err := ParsePolicyFile([]byte(`{"schema":"bwrapkit.policy/v1","ro":["/a","/b"],"env":["A=1"]}`)); err != nil {
		t.Errorf("a policy without repeats: %v", err)
	}
}

func TestPrivilegeKey(t *testing.T) {
	workdir := t.TempDir()
	outside := t.TempDir()
	cases := []struct {
		name    string
		request Request
		want    string
	}{
		{"nothing beyond the project", Request{}, ""},
		{"a read-only path inside", Request{ReadOnly: []string{filepath.Join(workdir, "x")}}, ""},
		{"the network", Request{Network: true}, "net"},
		{"a variable set", Request{Env: []string{"A=1"}}, "env=A"},
		{"the value does not matter", Request{Env: []string{"A=2"}}, "env=A"},
		{"a variable passed", Request{PassEnv: []string{"TOKEN"}}, "pass-env=TOKEN"},
		{"a read-write path outside", Request{ReadWrite: []string{outside}}, "rw=" + outside},
		{"a read-only path outside", Request{ReadOnly: []string{outside}}, "ro=" + outside},
		{"order does not matter", Request{Network: true, PassEnv: []string{"B", "A"}}, "net\x00pass-env=A\x00pass-env=B"},
		{"a host the proxy allows", Request{NetAllow: []string{"Registry.example.org:443"}}, "net-allow=registry.example.org:443"},
		{"commit mode", Request{Git: "commit"}, "git=commit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := privilegeKey(c.request, workdir, resolver{}); got != c.want {
				t.Errorf("privilegeKey = %q, want %q", got, c.want)
			}
		})
	}
}
