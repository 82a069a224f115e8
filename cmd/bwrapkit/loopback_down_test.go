package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestDoctorWithTheHostsLoopbackDown: in a network namespace whose loopback is down (as
// in an LXC container with lxc.net.0.type = empty, which make hosts found), the
// allowlist self-test has nothing to reach and says so (skip), instead of failing a host
// that can sandbox. A real namespace from unshare -n, as root (it needs CAP_SYS_ADMIN).
func TestDoctorWithTheHostsLoopbackDown(t *testing.T) {
	livetest.SystemBwrap(t) // a live test: skips (or fails, when required) without bwrap
	if os.Geteuid() != 0 {
		t.Skip("unshare -n needs root; the nobody run covers the rest")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		livetest.Skip(t, "no unshare (util-linux)")
	}
	status, stdout, stderr := runNewcomer(t, []string{unshare, "-n"}, []string{"HOME=/root", newcomerPATH}, "doctor", "--json")
	var doc struct {
		Status string `json:"status"`
		Checks []struct{ ID, Status, Summary string }
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("exit %d, no report: %v\n%s", status, err, stderr)
	}
	for _, check := range doc.Checks {
		if check.ID == "selftest.network" && check.Status != "ok" {
			t.Fatalf("precondition: the network self-test passes here: %s %q", check.Status, check.Summary)
		}
		if check.ID == "selftest.net-allow" && check.Status != "skip" {
			t.Errorf("net-allow with the loopback down: %s %q, want skip naming the loopback", check.Status, check.Summary)
		}
	}
	if status != 0 || doc.Status == "fail" {
		t.Errorf("the doctor failed a host that can sandbox: exit %d, status %s\n%s", status, doc.Status, stdout)
	}
}
