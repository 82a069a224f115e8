package doctor

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/report"
)

func returns(status report.Status, summary string) func(context.Context) report.Check {
	return func(context.Context) report.Check { return report.Check{Status: status, Summary: summary} }
}

func TestRunAll(t *testing.T) {
	hang := func(context.Context) report.Check { select {} }
	honours := func(ctx context.Context) report.Check {
		<-ctx.Done()
		return report.Check{Status: report.StatusFail, Summary: "gave up: " + ctx.Err().Error()}
	}
	tests := []struct {
		name  string
		specs []Spec
		want  map[string]string // id -> "status: summary prefix"
	}{
		{
			name: "a failed need skips its dependents, naming the root failure",
			specs: []Spec{
				{ID: "a", Run: returns(report.StatusFail, "broken")},
				{ID: "b", Needs: []string{"a"}, Run: returns(report.StatusOK, "")},
				{ID: "c", Needs: []string{"b"}, Run: returns(report.StatusOK, "")},
				{ID: "d", Run: returns(report.StatusWarn, "meh")},
			},
			want: map[string]string{
				"a": "fail: broken", "b": "skip: needs a, which failed",
				"c": "skip: needs b, which was skipped because a failed", "d": "warn: meh",
			},
		},
		{
			name: "a warning or a skip of its own lets dependents run or skip plainly",
			specs: []Spec{
				{ID: "a", Run: returns(report.StatusWarn, "old")},
				{ID: "b", Needs: []string{"a"}, Run: returns(report.StatusSkip, "not here")},
				{ID: "c", Needs: []string{"b"}, Run: returns(report.StatusOK, "")},
			},
			want: map[string]string{"a": "warn: old", "b": "skip: not here", "c": "skip: needs b, which was skipped"},
		},
		{
			name: "a hanging check fails without taking the run down",
			specs: []Spec{
				{ID: "hang", Timeout: 20 * time.Millisecond, Run: hang},
				{ID: "after", Needs: []string{"hang"}, Run: returns(report.StatusOK, "")},
				{ID: "other", Run: returns(report.StatusOK, "fine")},
			},
			want: map[string]string{"hang": "fail: did not finish within 20ms", "after": "skip: needs hang, which failed", "other": "ok: fine"},
		},
		{
			name:  "a check that honours its context reports in its own words",
			specs: []Spec{{ID: "slow", Timeout: 10 * time.Millisecond, Run: honours}},
			want:  map[string]string{"slow": "fail: gave up: context deadline exceeded"},
		},
		{
			name: "a panic becomes a failure",
			specs: []Spec{
				{ID: "boom", Run: func(context.Context) report.Check { panic("nil map") }},
				{ID: "fine", Run: returns(report.StatusOK, "")},
			},
			want: map[string]string{"boom": "fail: the check itself crashed: nil map", "fine": "ok: "},
		},
		{
			name:  "no verdict is a failure",
			specs: []Spec{{ID: "empty", Run: returns("", "forgot")}},
			want:  map[string]string{"empty": "fail: the check returned no verdict: forgot"},
		},
		{
			name:  "an unknown need is a skip",
			specs: []Spec{{ID: "a", Needs: []string{"ghost"}, Run: returns(report.StatusOK, "")}},
			want:  map[string]string{"a": "skip: needs ghost, which was not run"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			results := runAll(context.Background(), tc.specs, 4)
			for i, check := range results {
				if check.ID != tc.specs[i].ID {
					t.Fatalf("result %d is %s, want %s: order not kept", i, check.ID, tc.specs[i].ID)
				}
				got := string(check.Status) + ": " + check.Summary
				if !strings.HasPrefix(got, tc.want[check.ID]) {
					t.Errorf("%s = %q, want prefix %q", check.ID, got, tc.want[check.ID])
				}
			}
		})
	}
}

func TestRunAllBoundsParallelism(t *testing.T) {
	var running, peak atomic.Int32
	work := func(context.Context) report.Check {
		now := running.Add(1)
		for old := peak.Load(); now > old && !peak.CompareAndSwap(old, now); old = peak.Load() {
		}
		time.Sleep(5 * time.Millisecond)
		running.Add(-1)
		return report.Check{Status: report.StatusOK}
	}
	specs := make([]Spec, 12)
	for i := range specs {
		specs[i] = Spec{ID: string(rune('a' + i)), Run: work}
	}
	runAll(context.Background(), specs, 3)
	if peak.Load() > 3 || peak.Load() < 2 {
		t.Errorf("peak concurrency %d, want 2..3", peak.Load())
	}
}

func TestRunAllRecordsDuration(t *testing.T) {
	results := runAll(context.Background(), []Spec{{ID: "a", Run: func(context.Context) report.Check {
		time.Sleep(10 * time.Millisecond)
		return report.Check{Status: report.StatusOK}
	}}}, 1)
	if results[0].Duration < 10*time.Millisecond {
		t.Errorf("duration %v", results[0].Duration)
	}
}

func TestSelectSpecs(t *testing.T) {
	s := newSession(Config{})
	for _, tc := range []struct {
		wanted []string
		want   string
	}{
		{nil, strings.Join(reportOrder, " ")},
		{[]string{"bwrap.permissions"}, "platform bwrap.found bwrap.permissions"},
		{[]string{"userns", "platform"}, "platform userns"},
		{[]string{"selftest.nested-userns"}, "platform bwrap.found bwrap.version bwrap.features launch selftest.nested-userns"},
	} {
		selected, err := selectSpecs(s.specs(), tc.wanted)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, spec := range selected {
			got = append(got, spec.ID)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("select %v = %v, want %s", tc.wanted, got, tc.want)
		}
	}
	if _, err := selectSpecs(s.specs(), []string{"bwrap.fonud"}); err == nil || !strings.Contains(err.Error(), `"bwrap.fonud"`) {
		t.Errorf("unknown id: %v", err)
	}
}

// reportOrder is the order reports print the checks in (the documented list, docs/doctor.md), pinned here.
var reportOrder = []string{
	"platform", "bwrap.found", "bwrap.permissions", "bwrap.version", "bwrap.features", "userns", "launch", "homes",
	"selftest.launch-proof", "selftest.workdir-write", "selftest.outside-write", "selftest.git-readonly",
	"selftest.env-clear", "selftest.fd-isolation", "selftest.secrets-hidden", "selftest.network", "selftest.net-allow",
	"selftest.proc-isolation", "selftest.proc-sys-readonly", "selftest.capabilities", "selftest.setuid-refused",
	"selftest.seccomp", "selftest.keyring", "selftest.limits", "selftest.timeout-kill", "selftest.nested-userns",
	"selftest.workdir-vetting",
}

func TestSpecsMatchIDs(t *testing.T) {
	specs := newSession(Config{}).specs()
	ids := IDs()
	if strings.Join(ids, " ") != strings.Join(reportOrder, " ") {
		t.Errorf("IDs() = %v, want %v", ids, reportOrder)
	}
	if len(specs) != len(ids) {
		t.Fatalf("%d specs, %d ids", len(specs), len(ids))
	}
	seen := map[string]bool{}
	for i, spec := range specs {
		if spec.ID != ids[i] {
			t.Errorf("spec %d is %s, ids says %s", i, spec.ID, ids[i])
		}
		for _, need := range spec.Needs {
			if !seen[need] {
				t.Errorf("%s needs %s, which is not listed before it", spec.ID, need)
			}
		}
		seen[spec.ID] = true
	}
}
