package selftest

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// Each self-test's decision, over observations as the probe and the host report them.

func TestLaunchProofVerdict(t *testing.T) {
	host := map[string]string{"user": "user:[1]", "pid": "pid:[2]", "mnt": "mnt:[3]", "net": "net:[4]"}
	inside := probe.LaunchObservation{PID: 2, Namespaces: map[string]string{"user": "user:[9]", "pid": "pid:[8]", "mnt": "mnt:[7]", "net": "net:[6]"}}
	started := sandbox.Result{Started: true}
	if check := launchProofVerdict(started, inside, host); check.Status != report.StatusOK {
		t.Errorf("isolated: %s %s", check.Status, check.Summary)
	}
	sharedNet := probe.LaunchObservation{Namespaces: map[string]string{"user": "user:[9]", "pid": "pid:[8]", "mnt": "mnt:[7]", "net": "net:[4]"}}
	if check := launchProofVerdict(started, sharedNet, host); check.Status != report.StatusFail || !strings.Contains(check.Summary, "net") {
		t.Errorf("shared net: %s %s", check.Status, check.Summary)
	}
	if check := launchProofVerdict(sandbox.Result{}, inside, host); check.Status != report.StatusFail {
		t.Errorf("not started: %s", check.Status)
	}
}

func TestFileVerdicts(t *testing.T) {
	if c := workdirWriteVerdict(probe.FileOp{Op: "create", Path: "/w/x"}, probe.Content, nil); c.Status != report.StatusOK {
		t.Errorf("workdir write: %s", c.Summary)
	}
	if c := workdirWriteVerdict(probe.FileOp{Op: "create", Path: "/w/x"}, "", syscall.ENOENT); c.Status != report.StatusFail {
		t.Errorf("write not on host: %s", c.Status)
	}
	if c := workdirWriteVerdict(probe.FileOp{Op: "create", Error: "read-only file system"}, "", nil); c.Status != report.StatusFail {
		t.Errorf("refused write: %s", c.Status)
	}

	refused := []probe.FileOp{{Op: "create", Path: "/etc/x", Error: "read-only file system"}, {Op: "create", Path: "/tmp/p/x"}}
	if c := outsideWriteVerdict(refused, nil, sandbox.PrivateTmpfs()); c.Status != report.StatusOK || !strings.Contains(c.Detail, "private tmpfs") {
		t.Errorf("outside, host unchanged: %s %q", c.Status, c.Detail)
	}
	if c := outsideWriteVerdict(refused, []string{"/tmp/p/x"}, sandbox.PrivateTmpfs()); c.Status != report.StatusFail || c.Remedy == "" {
		t.Errorf("outside reached host: %s", c.Status)
	}
	throwaway := []probe.FileOp{{Op: "create", Path: "/etc/x"}, {Op: "create", Path: "/srv/p/x", Error: "read-only file system"}}
	if c := outsideWriteVerdict(throwaway, nil, sandbox.PrivateTmpfs()); c.Status != report.StatusFail || !strings.Contains(c.Summary, "/etc/x") {
		t.Errorf("a write into a throwaway root: %s %s", c.Status, c.Summary)
	}

	gitOps := []probe.FileOp{{Op: "append", Error: "read-only file system"}, {Op: "remove", Error: "read-only file system"}}
	if c := gitReadonlyVerdict(gitOps, gitConfigContent); c.Status != report.StatusOK {
		t.Errorf("git intact: %s", c.Summary)
	}
	if c := gitReadonlyVerdict(gitOps, gitConfigContent+probe.Content); c.Status != report.StatusFail {
		t.Errorf("git changed on host: %s", c.Status)
	}
	if c := gitReadonlyVerdict([]probe.FileOp{{Op: "append"}}, gitConfigContent); c.Status != report.StatusFail {
		t.Errorf("git append succeeded: %s", c.Status)
	}

}

func TestEnvClearVerdict(t *testing.T) {
	policy := sandbox.Policy{Workdir: "/w", Env: []string{"HELPER=probe"}, Host: sandbox.Host{Env: []string{"LANG=C.UTF-8", "LC_ALL=C"}}}
	expected := expectedEnv(policy)
	clean := append(policy.Environment(), "PWD=/w")
	if c := envClearVerdict(clean, "f00d", expected); c.Status != report.StatusOK {
		t.Errorf("clean: %s", c.Summary)
	}
	if c := envClearVerdict(append(clean, "BWRAPKIT_DOCTOR_CANARY=f00d"), "f00d", expected); c.Status != report.StatusFail || !strings.Contains(c.Summary, "BWRAPKIT_DOCTOR_CANARY") {
		t.Errorf("leak: %s %s", c.Status, c.Summary)
	}
	if c := envClearVerdict(append(clean, "SSH_AUTH_SOCK=/run/x"), "f00d", expected); c.Status != report.StatusFail || !strings.Contains(c.Summary, "SSH_AUTH_SOCK") {
		t.Errorf("extra: %s %s", c.Status, c.Summary)
	}
	// A name the policy allows, with the host's value instead of the policy's: a leak too.
	hostHome := append([]string{"HOME=/root"}, clean[1:]...)
	if c := envClearVerdict(hostHome, "f00d", expected); c.Status != report.StatusFail || !strings.Contains(c.Summary, "HOME") {
		t.Errorf("host value under an allowed name: %s %s", c.Status, c.Summary)
	}
}

func TestFDIsolationVerdict(t *testing.T) {
	stdio := []probe.FDEntry{{FD: 0, Target: "/dev/null"}, {FD: 1, Target: "pipe:[101]"}, {FD: 2, Target: "pipe:[102]"}}
	canary := "fd-canary-f00d"
	for _, tc := range []struct {
		name        string
		observation probe.FDObservation
		status      report.Status
		mentions    []string // in the summary
		remedy      bool     // a leak, which the runner must fix
	}{
		{"stdio only", probe.FDObservation{FDs: stdio}, report.StatusOK, nil, false},
		{"the canary leaked", probe.FDObservation{FDs: append(stdio, probe.FDEntry{FD: 3, Target: "/tmp/bwrapkit-doctor-1/" + canary})}, report.StatusFail,
			[]string{"3 -> /tmp/bwrapkit-doctor-1/" + canary + " (the doctor's canary)"}, true},
		{"a caller's socket and pipe leaked", probe.FDObservation{FDs: append(stdio, probe.FDEntry{FD: 5, Target: "socket:[7]"}, probe.FDEntry{FD: 9, Target: "pipe:[8]"})}, report.StatusFail,
			[]string{"5 -> socket:[7]", "9 -> pipe:[8]"}, true},
		{"unlistable", probe.FDObservation{Error: "open /proc/self/fd: no such file or directory"}, report.StatusFail, []string{"could not list"}, false},
		{"nothing listed", probe.FDObservation{}, report.StatusFail, []string{"no descriptors"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fdIsolationVerdict(tc.observation, canary)
			if c.Status != tc.status {
				t.Fatalf("status %s, want %s: %s", c.Status, tc.status, c.Summary)
			}
			for _, want := range tc.mentions {
				if !strings.Contains(c.Summary, want) {
					t.Errorf("summary %q does not mention %q", c.Summary, want)
				}
			}
			if tc.remedy && !strings.Contains(c.Remedy, "close-on-exec") {
				t.Errorf("a leak without the remedy: %q", c.Remedy)
			}
		})
	}
}

func TestNetworkVerdict(t *testing.T) {
	if c := networkVerdict(probe.DialObservation{Address: "127.0.0.1:1", Error: "connection refused"}, 0); c.Status != report.StatusOK {
		t.Errorf("isolated: %s", c.Summary)
	}
	if c := networkVerdict(probe.DialObservation{Address: "127.0.0.1:1"}, 1); c.Status != report.StatusFail {
		t.Errorf("reached: %s", c.Status)
	}
	if c := networkVerdict(probe.DialObservation{Address: "127.0.0.1:1", Error: "reset"}, 1); c.Status != report.StatusFail {
		t.Errorf("the host saw a connection: %s", c.Status)
	}
}

func TestProcIsolationVerdict(t *testing.T) {
	own := probe.ProcObservation{Self: 2, Processes: []probe.ProcEntry{{PID: 1, Comm: "bwrap"}, {PID: 2, PPID: 1, Comm: "doctor.test"}}}
	if c := procIsolationVerdict(own); c.Status != report.StatusOK {
		t.Errorf("own: %s", c.Summary)
	}
	host := probe.ProcObservation{Self: 4242, Processes: []probe.ProcEntry{{PID: 1, Comm: "systemd"}, {PID: 900, PPID: 1, Comm: "sshd"}, {PID: 4242, PPID: 4000, Comm: "probe"}}}
	if c := procIsolationVerdict(host); c.Status != report.StatusFail || !strings.Contains(c.Summary, "sshd") {
		t.Errorf("host /proc: %s %s", c.Status, c.Summary)
	}
}

func TestCapabilitiesVerdict(t *testing.T) {
	zero := probe.CapsObservation{Caps: map[string]string{"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000", "CapBnd": "0000000000000000", "CapAmb": "0000000000000000"}}
	if c := capabilitiesVerdict(zero); c.Status != report.StatusOK {
		t.Errorf("none: %s", c.Summary)
	}
	rootCaps := probe.CapsObservation{Caps: map[string]string{"CapEff": "000001ffffffffff", "CapPrm": "000001ffffffffff"}}
	if c := capabilitiesVerdict(rootCaps); c.Status != report.StatusFail || !strings.Contains(c.Summary, "CapEff=000001ffffffffff") {
		t.Errorf("root caps: %s %s", c.Status, c.Summary)
	}
	if c := capabilitiesVerdict(probe.CapsObservation{}); c.Status != report.StatusFail {
		t.Errorf("unreadable: %s", c.Status)
	}
}

func TestTimeoutKillVerdict(t *testing.T) {
	killed := sandbox.Result{Started: true, TimedOut: true, ExitCode: 124}
	ready := probe.SpawnObservation{Ready: true}
	if c := timeoutKillVerdict(killed, ready, nil); c.Status != report.StatusOK {
		t.Errorf("killed: %s", c.Summary)
	}
	if c := timeoutKillVerdict(killed, ready, []string{"4242: probe hold tok"}); c.Status != report.StatusFail || !strings.Contains(c.Summary, "4242") {
		t.Errorf("survivor: %s %s", c.Status, c.Summary)
	}
	if c := timeoutKillVerdict(sandbox.Result{Started: true, ExitCode: 3}, ready, nil); c.Status != report.StatusFail {
		t.Errorf("no timeout: %s", c.Status)
	}
	if c := timeoutKillVerdict(killed, probe.SpawnObservation{}, nil); c.Status != report.StatusFail || !strings.Contains(c.Summary, "never started") {
		t.Errorf("no grandchild: %s %s", c.Status, c.Summary)
	}
}

func TestNestedUsernsVerdict(t *testing.T) {
	for _, tc := range []struct {
		errno  syscall.Errno
		status report.Status
	}{
		{syscall.ENOSPC, report.StatusOK}, {syscall.EPERM, report.StatusOK}, {syscall.EUSERS, report.StatusOK},
		{0, report.StatusFail}, {syscall.ENOENT, report.StatusFail},
	} {
		if c := nestedUsernsVerdict(probe.UsernsObservation{Errno: int(tc.errno), Error: tc.errno.Error()}); c.Status != tc.status {
			t.Errorf("%v: %s, want %s", tc.errno, c.Status, tc.status)
		}
	}
}

// TestSecretsHiddenVerdict: judged by content. /root inside holding only the empty parents
// of the self-test's workdir is no leak (the false positive of issue 9); a planted secret
// read, or a host name listed, is.
func TestSecretsHiddenVerdict(t *testing.T) {
	const token = "t0k"
	planted := plantedSecret{"/root/" + SecretPrefix + token, "bwrapkit doctor secret t0k\n"}
	secrets := []plantedSecret{{"/s/home/secret", "canary t0k\n"}, planted}
	unreadable := []probe.FileOp{
		{Op: "read", Path: "/etc/shadow", Error: "no such file or directory"},
		{Op: "read", Path: "/s/home/secret", Error: "no such file or directory"},
		{Op: "read", Path: planted.path, Error: "no such file or directory"},
	}
	with := func(ops ...probe.FileOp) []probe.FileOp {
		return append(append([]probe.FileOp{}, unreadable...), ops...)
	}
	for _, tc := range []struct {
		name   string
		ops    []probe.FileOp
		status report.Status
		says   string
	}{
		{"/root holds only the workdir's parents", with(probe.FileOp{Op: "list", Path: "/root", Entries: []string{".cache"}}), report.StatusOK, "planted in /root"},
		{"/root does not exist inside", with(probe.FileOp{Op: "list", Path: "/root", Error: "no such file or directory"}), report.StatusOK, ""},
		{"/root is the host's", with(probe.FileOp{Op: "list", Path: "/root", Entries: []string{".cache", ".bashrc", SecretPrefix + token}}), report.StatusFail, "/root lists the host's " + SecretPrefix + token},
		{"a home of / shows the sandbox's own root", with(probe.FileOp{Op: "list", Path: "/", Entries: []string{"usr", "etc", "proc", "tmp"}}), report.StatusOK, ""},
		{"the planted secret is read", append(unreadable[:2:2], probe.FileOp{Op: "read", Path: planted.path, Content: planted.content}), report.StatusFail, "the planted secret's content"},
		{"/etc/shadow is read", append([]probe.FileOp{{Op: "read", Path: "/etc/shadow", Content: "root:*:"}}, unreadable[1:]...), report.StatusFail, "/etc/shadow"},
		{"nothing reported", nil, report.StatusFail, "no reads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := secretsHiddenVerdict(tc.ops, secrets)
			if c.Status != tc.status || !strings.Contains(c.Summary, tc.says) {
				t.Errorf("%s %q, want %s saying %q\n%s", c.Status, c.Summary, tc.status, tc.says, c.Detail)
			}
		})
	}
}

func TestWorkdirVettingVerdict(t *testing.T) {
	refusedAll := []sandbox.Refusal{{Path: "escape", Rule: "symlink-absolute"}, {Path: "open", Rule: "world-writable"}, {Path: "sub/.git", Rule: "git-entry"}}
	cases := []struct {
		name    string
		result  sandbox.Result
		present []string
		want    report.Status
	}{
		{"all refused, the honest file landed", sandbox.Result{WorkdirMode: sandbox.WorkdirTransactional, Refused: refusedAll}, []string{"honest"}, report.StatusOK},
		{"a planted .git reached the host", sandbox.Result{Refused: refusedAll}, []string{"honest", "sub/.git"}, report.StatusFail},
		{"the link reached the host", sandbox.Result{Refused: refusedAll}, []string{"honest", "escape"}, report.StatusFail},
		{"nothing landed at all", sandbox.Result{Refused: refusedAll}, nil, report.StatusFail},
		{"kept out but not named", sandbox.Result{Refused: refusedAll[:2]}, []string{"honest"}, report.StatusFail},
		{"the probe failed", sandbox.Result{ExitCode: 1, Refused: refusedAll}, []string{"honest"}, report.StatusFail},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := workdirVettingVerdict(c.result, func(name string) bool { return slices.Contains(c.present, name) })
			if got.Status != c.want {
				t.Errorf("status %s, want %s: %s", got.Status, c.want, got.Summary)
			}
		})
	}
}

// killBounds starts at the launch's duration (10 ms beside it) and only ever grows.
func TestKillBounds(t *testing.T) {
	for _, tc := range []struct {
		launch time.Duration
		want   []time.Duration
	}{
		{0, []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 250 * time.Millisecond, time.Second, 5 * time.Second}},
		{30 * time.Millisecond, []time.Duration{30 * time.Millisecond, 50 * time.Millisecond, 250 * time.Millisecond, time.Second, 5 * time.Second}},
		{120 * time.Millisecond, []time.Duration{120 * time.Millisecond, 250 * time.Millisecond, time.Second, 5 * time.Second}},
		{time.Minute, []time.Duration{time.Second, 5 * time.Second}},
	} {
		if got := killBounds(tc.launch); !slices.Equal(got, tc.want) {
			t.Errorf("killBounds(%v) = %v, want %v", tc.launch, got, tc.want)
		}
	}
}
