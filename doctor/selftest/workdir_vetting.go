package selftest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
	"github.com/bwrapkit/bwrapkit/sandbox/land"
)

// WorkdirVetting is the transactional workdir's self-test: in a scratch project of its
// own, the probe plants what host tools would trust (a repository in a subdirectory, a
// symlink out of the project, a 0777 directory) beside one honest file. None of the
// three may reach the host, each must be named as refused, and the honest file must
// land. Where only the direct mode can be built it warns, with the remedy. Its run
// carries net-allow's part too (Joint).
func WorkdirVetting(ctx context.Context, env *Env, _ Launched) report.Check {
	return env.joint(workdirVettingID).check(ctx, env, workdirVettingID)
}

// vettingOps are the probe's file operations in the scratch project.
var vettingOps = []string{
	"mkdir:sub", "mkdir:sub/.git", "create:sub/.git/config", "symlink-out:escape",
	"mkdir:open", "chmod-open:open", "create:honest",
}

// vettingSetup is the scratch project and its transactional policy.
type vettingSetup struct {
	project string
	policy  sandbox.Policy
	cleanup func()
}

// prepareVetting makes the scratch project and its policy, or says why there is no run
// (setup nil, and the check to report: the direct-mode warning among them).
func prepareVetting(env *Env) (*vettingSetup, report.Check) {
	project := filepath.Join(env.Scene.base, "vetting")
	if err := os.Mkdir(project, 0o700); err != nil {
		return nil, Failed("its scratch project could not be made", err)
	}
	setup := &vettingSetup{project: project}
	setup.cleanup = func() { os.RemoveAll(project) }
	policy, err := env.policyFor(project, sandbox.WorkdirAuto)
	if err != nil {
		setup.cleanup()
		return nil, Failed("its policy could not be built", err)
	}
	if policy.LayerRoot != "" {
		setup.cleanup = func() { land.Remove(policy.LayerRoot); os.RemoveAll(project) }
	}
	setup.policy = policy
	choice, err := policy.ChooseMode()
	if err != nil {
		setup.cleanup()
		return nil, Failed("the workdir mode could not be chosen", err)
	}
	if choice.Mode != sandbox.WorkdirTransactional {
		setup.cleanup()
		return nil, report.Check{Status: report.StatusWarn,
			Summary: "only the direct workdir mode is possible here: a command's writes reach the project live, unvetted",
			Detail:  choice.Fallback,
			Remedy:  "run `bwrapkit install` for a bwrap with --overlay (bubblewrap 0.11 or later), on Linux 5.11 or later"}
	}
	return setup, report.Check{}
}

// verdict judges the run by what the host's project holds after it.
func (v *vettingSetup) verdict(res ProbeResult, err error) report.Check {
	if err != nil {
		return Failed("the vetting probe did not run", err)
	}
	return workdirVettingVerdict(res.Result, func(name string) bool {
		_, err := os.Lstat(filepath.Join(v.project, name))
		return err == nil
	})
}

// workdirVettingVerdict judges by the host (present says whether a project path
// exists there now) and by the run's refusals.
func workdirVettingVerdict(result sandbox.Result, present func(string) bool) report.Check {
	detail := fmt.Sprintf("mode %s, exit %d, refused %v, quarantine %s", result.WorkdirMode, result.ExitCode, result.Refused, result.Quarantine)
	var reached []string
	for _, name := range []string{"sub/.git", "escape", "open"} {
		if present(name) {
			reached = append(reached, name)
		}
	}
	if len(reached) > 0 {
		return breach("planted entries reached the host's project: "+strings.Join(reached, ", "), detail)
	}
	if result.ExitCode != 0 || !present("honest") {
		return report.Check{Status: report.StatusFail, Summary: "the probe's honest file did not land, so the vetting proves nothing", Detail: detail}
	}
	for _, want := range []sandbox.Refusal{{Path: "sub/.git", Rule: "git-entry"}, {Path: "escape", Rule: "symlink-absolute"}, {Path: "open", Rule: "world-writable"}} {
		if !slices.Contains(result.Refused, want) {
			return report.Check{Status: report.StatusFail, Summary: fmt.Sprintf("%s was kept out but not named as refused (%s)", want.Path, want.Rule), Detail: detail}
		}
	}
	return pass("a planted .git, an escaping symlink and a 0777 directory were refused and kept off the host; an honest file landed", detail)
}
