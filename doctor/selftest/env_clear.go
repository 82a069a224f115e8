package selftest

import (
	"context"
	"fmt"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
)

// EnvClear is the self-test of its name; see doctor/README.md for why it can fail and pass.
func EnvClear(ctx context.Context, env *Env, launched Launched) report.Check {
	fixture := env.Scene
	observation, err := Decode[probe.EnvObservation](env.Run(ctx, ProbeRun{Name: "env"}))
	if err != nil {
		return Failed("the environment probe did not run", err)
	}
	return envClearVerdict(observation.Environ, fixture.token, allowedEnv(env.Probe.Env))
}

// envClearVerdict: the canary is nowhere in the environment, and nothing beyond what the
// contract passes is set.
func envClearVerdict(environ []string, canary string, allowed func(name string) bool) report.Check {
	var leaked, extra []string
	for _, entry := range environ {
		name, _, _ := strings.Cut(entry, "=")
		switch {
		case strings.Contains(entry, canary):
			leaked = append(leaked, name)
		case !allowed(name):
			extra = append(extra, name)
		}
	}
	names := make([]string, 0, len(environ))
	for _, entry := range environ {
		name, _, _ := strings.Cut(entry, "=")
		names = append(names, name)
	}
	detail := "inside: " + strings.Join(names, " ")
	switch {
	case len(leaked) > 0:
		return breach("a secret from the caller's environment reached the sandbox as "+strings.Join(leaked, ", "), detail)
	case len(extra) > 0:
		return breach("variables the contract does not pass are set inside: "+strings.Join(extra, ", "), detail)
	}
	return pass(fmt.Sprintf("the caller's secret stayed outside; %d variables inside, all expected", len(environ)), detail)
}

// allowedEnv are the names the contract sets inside, and those the doctor itself asked for.
func allowedEnv(extra []string) func(string) bool {
	return func(name string) bool {
		switch name {
		case "PATH", "HOME", "TMPDIR", "LANG", "TZ", "TERM":
			return true
		case "PWD":
			return true // bwrap itself sets it after --chdir
		}
		if strings.HasPrefix(name, "LC_") {
			return true
		}
		for _, entry := range extra {
			if n, _, _ := strings.Cut(entry, "="); n == name {
				return true
			}
		}
		return false
	}
}
