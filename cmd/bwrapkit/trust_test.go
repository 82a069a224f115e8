package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// Trust across runs, judged by what a later run sees and by what bwrapkit refuses.

// TestLiveHomeIsKeyedByPrivilege: a run without network plants a ~/.gitconfig; a run
// with --net --pass-env must not start from it, while a run like the first still does.
func TestLiveHomeIsKeyedByPrivilege(t *testing.T) {
	for _, bwrap := range livetest.Bwraps(t) {
		t.Run(bwrap.Name, func(t *testing.T) {
			asUsers(t, func(t *testing.T, prefix []string, project, home string) {
				plant := `printf '[core]\n\tfsmonitor = planted\n' > "$HOME/.gitconfig"`
				if status, _, stderr := runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--", "sh", "-c", plant); status != 0 {
					t.Fatalf("planting run: exit %d\n%s", status, stderr)
				}
				look := `cat "$HOME/.gitconfig" 2>/dev/null || echo absent`
				status, stdout, stderr := runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--net", "--pass-env", "TOKEN", "--", "sh", "-c", look)
				if status != 0 || strings.Contains(stdout, "planted") {
					t.Errorf("a run with --net --pass-env started from the less privileged run's HOME: exit %d\n%s%s", status, stdout, stderr)
				}
				status, stdout, _ = runIn(t, prefix, project, home, "run", "--bwrap", bwrap.Path, "--", "sh", "-c", look)
				if status != 0 || !strings.Contains(stdout, "planted") {
					t.Errorf("control: a run like the first does not keep its HOME: %q", stdout)
				}
			})
		})
	}
}

// TestLivePolicyFileTrust: a policy inside the workdir is read only as committed; none
// may set report; --report and --ro refuse home dot-entries; a workdir others can write
// is refused.
func TestLivePolicyFileTrust(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	asUsers(t, func(t *testing.T, prefix []string, project, home string) {
		git := func(args ...string) {
			t.Helper()
			argv := append(append(append([]string{}, prefix...), "env", "-i", "HOME="+home, newcomerPATH, "git", "-C", project), args...)
			if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		git("init", "-q")
		policy := filepath.Join(project, "policy.json")
		write := func(text string) {
			t.Helper()
			argv := append(append([]string{}, prefix...), "sh", "-c", `printf '%s' "$1" > "$2"`, "sh", text, policy)
			if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%v %s", err, out)
			}
		}
		write(`{"schema":"bwrapkit.policy/v1","net":true}`)
		status, _, stderr := runIn(t, prefix, project, home, "run", "--bwrap", bwrap, "--workdir-mode", "direct", "--policy", policy, "--", "true")
		if status != 2 || !strings.Contains(stderr, "not committed in HEAD") {
			t.Errorf("an uncommitted policy in the workdir: exit %d\n%s", status, stderr)
		}
		git("add", "policy.json")
		git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "policy")
		if status, _, stderr = runIn(t, prefix, project, home, "run", "--bwrap", bwrap, "--policy", policy, "--", "true"); status != 0 {
			t.Errorf("the committed policy: exit %d\n%s", status, stderr)
		}
		write(`{"schema":"bwrapkit.policy/v1","net":true,"pass_env":["TOKEN"]}`)
		status, _, stderr = runIn(t, prefix, project, home, "run", "--bwrap", bwrap, "--policy", policy, "--", "true")
		if status != 2 || !strings.Contains(stderr, "differs from its version committed") {
			t.Errorf("a policy rewritten after its commit: exit %d\n%s", status, stderr)
		}
		outside := filepath.Join(home, "outside.json")
		if err := os.WriteFile(outside, []byte(`{"schema":"bwrapkit.policy/v1","report":"`+filepath.Join(home, ".bashrc")+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		status, _, stderr = runIn(t, prefix, project, home, "run", "--bwrap", bwrap, "--policy", outside, "--", "true")
		if status != 2 || !strings.Contains(stderr, "cannot set report") {
			t.Errorf("a policy that sets report: exit %d\n%s", status, stderr)
		}
		status, _, stderr = runIn(t, prefix, project, home, "run", "--bwrap", bwrap, "--report", filepath.Join(home, ".bashrc"), "--", "true")
		if status != 2 || !strings.Contains(stderr, ".bashrc") {
			t.Errorf("--report ~/.bashrc: exit %d\n%s", status, stderr)
		}
		if _, err := os.Lstat(filepath.Join(home, ".bashrc")); err == nil {
			t.Error("--report wrote a shell start-up file")
		}
		ssh := filepath.Join(home, ".ssh")
		os.Mkdir(ssh, 0o700)
		status, _, stderr = runIn(t, prefix, project, home, "run", "--bwrap", bwrap, "--ro", ssh, "--", "true")
		if status != 2 || !strings.Contains(stderr, ".ssh") {
			t.Errorf("--ro ~/.ssh: exit %d\n%s", status, stderr)
		}
	})
}

func TestLiveWorkdirOthersCanWriteIsRefused(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	asUsers(t, func(t *testing.T, prefix []string, project, home string) {
		if err := os.Chmod(project, 0o777); err != nil {
			t.Fatal(err)
		}
		status, _, stderr := runIn(t, prefix, project, home, "run", "--bwrap", bwrap, "--", "true")
		if status != 2 || !strings.Contains(stderr, "writable by every user") {
			t.Errorf("a 0777 workdir: exit %d\n%s", status, stderr)
		}
	})
}

// TestLivePolicyCommittedBySandboxIsNotTrusted: a --git commit run commits a widened
// version of the project's own policy (network on). HEAD then holds it, so "as committed
// in HEAD" would trust it; the next run must refuse it, naming the sandboxed commit as
// the cause and the record to remove as the fix; once removed (the user's confirmation,
// outside the sandbox), the policy is read. Transactionally and in direct mode, on every
// bwrap (Debian's 0.8.0 runs direct).
func TestLivePolicyCommittedBySandboxIsNotTrusted(t *testing.T) {
	for _, bwrap := range livetest.Bwraps(t) {
		modes := []string{"direct"}
		if hasOverlay(bwrap.Path) {
			modes = append(modes, "transactional")
		}
		for _, mode := range modes {
			t.Run(bwrap.Name+"/"+mode, func(t *testing.T) {
				asUsers(t, func(t *testing.T, prefix []string, project, home string) {
					git := userGit(t, prefix, project, home)
					narrow := `{"schema":"bwrapkit.policy/v1","env":["POLICY=narrow"]}`
					wide := `{"schema":"bwrapkit.policy/v1","env":["POLICY=wide"],"net":true}`
					policy := filepath.Join(project, "policy.json")
					git("init", "-q", "-b", "main")
					if err := os.WriteFile(policy, []byte(narrow), 0o644); err != nil {
						t.Fatal(err)
					}
					os.Chown(policy, uidOf(prefix), uidOf(prefix))
					git("add", "policy.json")
					git("commit", "-qm", "the user's policy")
					run := func(args ...string) (int, string, string) {
						t.Helper()
						return runIn(t, prefix, project, home, append([]string{"run", "--bwrap", bwrap.Path, "--workdir-mode", mode}, args...)...)
					}
					if status, stdout, stderr := run("--policy", policy, "--", "sh", "-c", `echo "$POLICY"`); status != 0 || strings.TrimSpace(stdout) != "narrow" {
						t.Fatalf("the user's committed policy: exit %d %q\n%s", status, stdout, stderr)
					}
					widen := `printf '%s' "$1" > policy.json && git add policy.json && git -c user.name=s -c user.email=s@s commit -qm widen`
					if status, _, stderr := run("--git", "commit", "--", "sh", "-c", widen, "sh", wide); status != 0 {
						t.Fatalf("the widening commit: exit %d\n%s", status, stderr)
					}
					if shown := git("show", "HEAD:policy.json"); shown != wide {
						t.Fatalf("the sandbox's commit did not land, so this test proves nothing: HEAD holds %q", shown)
					}
					status, stdout, stderr := run("--policy", policy, "--", "sh", "-c", `echo "$POLICY"`)
					record := filepath.Join(home, ".cache", "bwrapkit", "layers")
					if status != 2 || strings.Contains(stdout, "wide") || !strings.Contains(stderr, "sandboxed --git commit") || !strings.Contains(stderr, "removing "+record) {
						t.Fatalf("a policy the sandbox committed itself was not refused as such: exit %d %q\n%s", status, stdout, stderr)
					}
					records, _ := filepath.Glob(filepath.Join(record, "*", "policy-base"))
					if len(records) != 1 {
						t.Fatalf("policy-base records: %v", records)
					}
					if err := os.Remove(records[0]); err != nil {
						t.Fatal(err)
					}
					if status, stdout, stderr := run("--policy", policy, "--", "sh", "-c", `echo "$POLICY"`); status != 0 || strings.TrimSpace(stdout) != "wide" {
						t.Errorf("the policy, confirmed by removing the record: exit %d %q\n%s", status, stdout, stderr)
					}
				})
			})
		}
	}
}
