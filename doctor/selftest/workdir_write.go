package selftest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
)

// The live self-tests. Each runs the probe through sandbox.Run and proves an effect on the
// host; the decisions are in verdict.go.
func WorkdirWrite(ctx context.Context, env *Env, launched Launched) report.Check {
	fixture := env.Scene
	target := filepath.Join(fixture.workdir, "written-"+fixture.token)
	observation, err := Decode[probe.FSObservation](env.Run(ctx, ProbeRun{Name: "fs", Args: []string{"create:" + target}}))
	if err != nil || len(observation.Ops) != 1 {
		return Failed("the write probe did not run", orReport(err))
	}
	content, hostErr := os.ReadFile(target)
	return workdirWriteVerdict(observation.Ops[0], string(content), hostErr)
}

// workdirWriteVerdict: the file the probe created inside is on the host with its content.
func workdirWriteVerdict(op probe.FileOp, hostContent string, hostErr error) report.Check {
	switch {
	case op.Error != "":
		return report.Check{Status: report.StatusFail, Summary: "writing in the workdir failed inside the sandbox: " + op.Error,
			Remedy: "the workdir must be writable by this user; a read-only or noexec workdir breaks toolchains"}
	case hostErr != nil:
		return breach("a file written in the workdir inside did not appear on the host", hostErr.Error())
	case hostContent != probe.Content:
		return breach("the file written in the workdir has other content on the host", strconv.Quote(hostContent))
	}
	return pass("a file written in the workdir appeared on the host", op.Path)
}
