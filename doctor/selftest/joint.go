package selftest

import (
	"context"
	"sync"

	"github.com/bwrapkit/bwrapkit/doctor/report"
)

const (
	netAllowID       = "selftest.net-allow"
	workdirVettingID = "selftest.workdir-vetting"
)

// Joint is the one run net-allow and workdir-vetting share: each needs a sandbox unlike
// the shared launch's (the proxy's socket bound in; a transactional workdir over a scratch
// project), and neither property depends on the other's difference, so where the
// transactional workdir can be built one run carries both: the probe bridges to the proxy
// and asks for both hosts after its file operations in the scratch project. Each check
// still judges only its own part (its observation, or the host's project after the run),
// with the verdict it has alone. Where only the direct mode exists, vetting warns with no
// run and net-allow runs alone over the scene, as it would without the other.
type Joint struct {
	want   map[string]bool // which of the two this doctor selected
	once   sync.Once
	checks map[string]report.Check
}

// NewJoint is the joint run of whichever of the two tests are among the selected ones;
// nil when neither is.
func NewJoint(tests []Test) *Joint {
	joint := &Joint{want: map[string]bool{}, checks: map[string]report.Check{}}
	for _, test := range tests {
		if test.ID == netAllowID || test.ID == workdirVettingID {
			joint.want[test.ID] = true
		}
	}
	if len(joint.want) == 0 {
		return nil
	}
	return joint
}

// joint is the doctor's shared run, or, for an Env without one (a caller running one of
// the two alone), a run of id's own: the same code judges both ways.
func (env *Env) joint(id string) *Joint {
	if env.Joint != nil {
		return env.Joint
	}
	return NewJoint([]Test{{ID: id}})
}

// check is id's verdict; the first of the two to ask makes the run (under its own bound),
// the other waits for it.
func (j *Joint) check(ctx context.Context, env *Env, id string) report.Check {
	j.once.Do(func() { j.run(ctx, env) })
	if check, ok := j.checks[id]; ok {
		return check
	}
	return report.Check{Status: report.StatusFail, Summary: "the joint run did not carry it (not selected)"}
}

func (j *Joint) run(ctx context.Context, env *Env) {
	var vetting *vettingSetup
	if j.want[workdirVettingID] {
		var check report.Check
		if vetting, check = prepareVetting(env); vetting == nil {
			j.checks[workdirVettingID] = check
		} else {
			defer vetting.cleanup()
		}
	}
	var netAllow *netAllowSetup
	if j.want[netAllowID] {
		var check report.Check
		if netAllow, check = prepareNetAllow(env); netAllow == nil {
			j.checks[netAllowID] = check
		} else {
			defer netAllow.cleanup()
		}
	}
	switch {
	case vetting != nil && netAllow != nil:
		res, err := env.run(ctx, vetting.policy, netAllow.run(vettingOps...))
		j.checks[workdirVettingID] = vetting.verdict(res, err)
		j.checks[netAllowID] = netAllow.verdict(res, err)
	case vetting != nil:
		res, err := env.run(ctx, vetting.policy, ProbeRun{Name: "fs", Args: vettingOps})
		j.checks[workdirVettingID] = vetting.verdict(res, err)
	case netAllow != nil:
		policy, err := env.Policy(false, nil)
		if err != nil {
			j.checks[netAllowID] = Failed("the policy", err)
			return
		}
		res, err := env.run(ctx, policy, netAllow.run())
		j.checks[netAllowID] = netAllow.verdict(res, err)
	}
}
