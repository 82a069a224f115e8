package lifetime

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseMessage(t *testing.T) {
	for _, tc := range []struct {
		line string
		want message
		bad  bool
	}{
		{line: "bwrap 42", want: message{kind: "bwrap", pid: 42}},
		{line: "init 7\n", want: message{kind: "init", pid: 7}},
		{line: "cgroup /sys/fs/cgroup/unified/bwrapkit-run-ab12", want: message{kind: "cgroup", path: "/sys/fs/cgroup/unified/bwrapkit-run-ab12"}},
		{line: "cgroup /sys/fs/cgroup/unified", bad: true},
		{line: "cgroup bwrapkit-run-ab12", bad: true},
		{line: "cgroup ", bad: true},
		{line: "auditor /usr/bin/bwrapkit", want: message{kind: "auditor", path: "/usr/bin/bwrapkit"}},
		{line: "audit /home/u/.cache/bwrapkit/layers/p/audit-pending-1", want: message{kind: "audit", path: "/home/u/.cache/bwrapkit/layers/p/audit-pending-1"}},
		{line: "auditor bwrapkit", bad: true},
		{line: "audit /a/../etc/x", bad: true},
		{line: "auditor ", bad: true},
		{line: "done", want: message{kind: "done"}},
		{line: "done now", bad: true},
		{line: "init 0", bad: true},
		{line: "init -3", bad: true},
		{line: "bwrap x", bad: true},
		{line: "kill 1", bad: true},
		{line: "", bad: true},
	} {
		got, err := parseMessage(tc.line)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("parseMessage(%q) = %+v, %v", tc.line, got, err)
		}
	}
}

func TestFollow(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		want        watched
	}{
		{"told everything, then done", "bwrap 10\ninit 11\ndone\n", watched{bwrap: 10, init: 11, done: true}},
		{"cgroups in order", "cgroup /a/bwrapkit-run-1\ncgroup /b/bwrapkit-run-1\nbwrap 10\n", watched{bwrap: 10, cgroups: []string{"/a/bwrapkit-run-1", "/b/bwrapkit-run-1"}}},
		{"gone before init", "bwrap 10\n", watched{bwrap: 10}},
		{"an audit pending", "auditor /bin/bk\naudit /s/audit-pending-1\nbwrap 10\n", watched{bwrap: 10, auditor: "/bin/bk", audit: "/s/audit-pending-1"}},
		{"gone at once", "", watched{}},
		{"garbage is gone, not done", "bwrap 10\nfoo\ndone\n", watched{bwrap: 10}},
		{"a torn last line is not done", "bwrap 10\ndon", watched{bwrap: 10}},
	} {
		if got := follow(strings.NewReader(tc.input), nil); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestMarked(t *testing.T) {
	token := "abc123"
	for _, tc := range []struct {
		environ string
		want    bool
	}{
		{TokenVar + "=abc123\x00", true},
		{"A=1\x00" + TokenVar + "=abc123", true},
		{TokenVar + "=abc1234\x00", false},
		{"X" + TokenVar + "=abc123\x00", false},
		{TokenVar + "=other\x00", false},
		{"", false},
	} {
		if got := marked([]byte(tc.environ), token); got != tc.want {
			t.Errorf("marked(%q) = %v", tc.environ, got)
		}
	}
}

// TestAuditThatFailsIsSaid: an auditor that cannot be started (or fails) leaves a line in
// the log beside the record, naming the auditor and the record left for the next run.
func TestAuditThatFailsIsSaid(t *testing.T) {
	dir := t.TempDir()
	record := dir + "/audit-pending-1"
	audit(dir+"/no-such-auditor", record)
	said, err := os.ReadFile(dir + "/" + AuditLogName)
	if err != nil || !strings.Contains(string(said), "did not finish") || !strings.Contains(string(said), dir+"/no-such-auditor") || !strings.Contains(string(said), "the record stays ("+record+")") {
		t.Errorf("the log: %q, %v", said, err)
	}
}
