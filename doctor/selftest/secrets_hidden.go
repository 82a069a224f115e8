package selftest

import (
	"context"
	"fmt"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
)

// SecretsHidden is the self-test of its name; see doctor/README.md for why it can fail and pass.
func SecretsHidden(ctx context.Context, env *Env, launched Launched) report.Check {
	fixture := env.Scene
	observation, err := Decode[probe.FSObservation](env.Run(ctx, ProbeRun{Name: "fs", Args: []string{
		"read:/etc/shadow", "read:" + fixture.secret, "read:" + fixture.home, "read:/root"}}))
	if err != nil {
		return Failed("the read probe did not run", err)
	}
	return secretsHiddenVerdict(observation.Ops)
}

// secretsHiddenVerdict: every read failed.
func secretsHiddenVerdict(ops []probe.FileOp) report.Check {
	var readable, detail []string
	for _, op := range ops {
		detail = append(detail, fmt.Sprintf("read %s: %s", op.Path, orSucceeded(op.Error)))
		if op.Error == "" {
			readable = append(readable, op.Path)
		}
	}
	if len(readable) > 0 {
		return breach("secrets are readable inside: "+strings.Join(readable, ", "), strings.Join(detail, "\n"))
	}
	if len(ops) == 0 {
		return report.Check{Status: report.StatusFail, Summary: "the probe reported no reads"}
	}
	return pass("/etc/shadow and a file in the caller's home are unreadable inside", strings.Join(detail, "\n"))
}
