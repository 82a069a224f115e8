package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyBaseRules: what a --git commit run records before it starts, and which
// in-project policy the record lets through, judged with the host's real git.
func TestPolicyBaseRules(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	workdir, state := t.TempDir(), t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-C", workdir}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	path := filepath.Join(workdir, "policy.json")
	commit := func(text string) string {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		git("add", "policy.json")
		git("commit", "-qm", text)
		return git("rev-parse", "HEAD")
	}
	policy := Policy{Workdir: workdir, Git: GitCommit, PolicyBase: filepath.Join(state, policyBaseName)}
	trust := func() error {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return TrustPolicyFile(policy, path, data)
	}
	record := func(mode WorkdirMode) string {
		t.Helper()
		if err := recordPolicyBase(policy, mode); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(policy.PolicyBase)
		return strings.TrimSpace(string(data))
	}
	expect := func(what string, err error, want string) {
		t.Helper()
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: refused: %v", what, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: want a refusal saying %q, got %v", what, want, err)
		}
	}

	git("init", "-q", "-b", "main")
	if got := record(WorkdirTransactional); got != baseNone {
		t.Errorf("a run from an unborn HEAD recorded %q, want %q", got, baseNone)
	}
	first := commit("v1")
	expect("a policy first committed after a run began from no commit", trust(), "HEAD named no commit")
	os.Remove(policy.PolicyBase)
	expect("no record: HEAD's version", trust(), "")

	if got := record(WorkdirTransactional); got != first {
		t.Errorf("recorded %q, want HEAD %s", got, first)
	}
	second := commit("v2")
	if got := record(WorkdirTransactional); got != first {
		t.Errorf("a later run replaced the record with %q; the earliest unconfirmed base must stand (%s)", got, first)
	}
	expect("a policy changed since the base", trust(), "differs from its version in "+first[:12])
	git("reset", "-q", "--hard", first)
	expect("HEAD back at the base", trust(), "")

	os.Remove(policy.PolicyBase)
	git("reset", "-q", "--hard", second)
	record(WorkdirTransactional)
	git("reset", "-q", "--hard", first) // a ref moved back to an older, laxer policy
	expect("a rollback to an older committed policy", trust(), "differs from its version in "+second[:12])

	git("reset", "-q", "--hard", second)
	if got := record(WorkdirDirect); got != baseDirect {
		t.Errorf("a direct run kept %q; its unvetted object writes must void a recorded commit", got)
	}
	expect("after a direct --git commit run", trust(), "direct mode")
	if got := record(WorkdirTransactional); got != baseDirect {
		t.Errorf("a transactional run replaced the direct record with %q", got)
	}
	if err := os.WriteFile(policy.PolicyBase, []byte("HEAD:x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	expect("a record bwrapkit did not write", trust(), "not a record bwrapkit wrote")
	if err := os.WriteFile(policy.PolicyBase, []byte("HEAD\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	expect("a record naming a revision, not a commit", trust(), "not a record bwrapkit wrote")
	os.Remove(policy.PolicyBase)
	record(WorkdirTransactional)
	commit("v3")
	if err := trust(); err == nil || !strings.Contains(err.Error(), "removing "+policy.PolicyBase) {
		t.Errorf("the refusal does not name the fix (the record to remove): %v", err)
	}
	noState := policy
	noState.PolicyBase = ""
	if err := recordPolicyBase(noState, WorkdirTransactional); err == nil {
		t.Error("a --git commit run with nowhere to record its base was let through")
	}
}

// TestTrustPolicyFileRefusesWritablePlaces: a policy file in the policy's HOME or in a
// --rw path, which a sandboxed command can rewrite before the next run reads it, is
// refused wherever that lies; one beside them is not.
func TestTrustPolicyFileRefusesWritablePlaces(t *testing.T) {
	base := t.TempDir()
	workdir, home, rw := filepath.Join(base, "project"), filepath.Join(base, "home"), filepath.Join(base, "cache")
	for _, dir := range []string{workdir, home, rw} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	policy := Policy{Workdir: workdir, Home: home, ReadWrite: []string{rw}}
	data := []byte(`{"schema":"bwrapkit.policy/v1"}`)
	for _, path := range []string{filepath.Join(home, "policy.json"), filepath.Join(rw, "sub", "policy.json")} {
		err := TrustPolicyFile(policy, path, data)
		if err == nil || !strings.Contains(err.Error(), "which sandboxed commands can write") {
			t.Errorf("%s: want a refusal naming the writable place, got %v", path, err)
		}
	}
	if err := TrustPolicyFile(policy, filepath.Join(base, "policy.json"), data); err != nil {
		t.Errorf("a policy outside every writable place refused: %v", err)
	}
}
