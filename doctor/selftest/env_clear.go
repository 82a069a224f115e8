package selftest

import (
	"context"
	"fmt"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// EnvClear is the self-test of its name; see doctor/README.md for why it can fail and pass.
// The expectation is the sandbox's own: Policy.Environment, the one list argv sets.
func EnvClear(env *Env, policy sandbox.Policy, request *probe.Request) (Part, error) {
	request.Env = true
	canary, expected := env.Scene.token, expectedEnv(policy)
	return Part{Judge: func(_ context.Context, launched Launched) report.Check {
		if launched.Observation.Env == nil {
			return missing("environment")
		}
		return envClearVerdict(launched.Observation.Env.Environ, canary, expected)
	}}, nil
}

// expectedEnv is the environment the policy sets inside (a later entry wins, as with
// --setenv), and PWD, which bwrap itself sets after --chdir.
func expectedEnv(policy sandbox.Policy) map[string]string {
	expected := map[string]string{"PWD": policy.Workdir}
	for _, entry := range policy.Environment() {
		name, value, _ := strings.Cut(entry, "=")
		expected[name] = value
	}
	return expected
}

// envClearVerdict: the canary is nowhere in the environment, nothing beyond what the
// policy sets is there, and what it sets has the policy's value (a host value under an
// allowed name is a leak too).
func envClearVerdict(environ []string, canary string, expected map[string]string) report.Check {
	var leaked, extra, changed, names []string
	for _, entry := range environ {
		name, value, _ := strings.Cut(entry, "=")
		names = append(names, name)
		want, allowed := expected[name]
		switch {
		case strings.Contains(entry, canary):
			leaked = append(leaked, name)
		case !allowed:
			extra = append(extra, name)
		case value != want:
			changed = append(changed, name)
		}
	}
	detail := "inside: " + strings.Join(names, " ")
	switch {
	case len(leaked) > 0:
		return breach("a secret from the caller's environment reached the sandbox as "+strings.Join(leaked, ", "), detail)
	case len(extra) > 0:
		return breach("variables the policy does not set are set inside: "+strings.Join(extra, ", "), detail)
	case len(changed) > 0:
		return breach("variables inside have other values than the policy sets: "+strings.Join(changed, ", "), detail)
	}
	return pass(fmt.Sprintf("the caller's secret stayed outside; %d variables inside, each as the policy sets it", len(environ)), detail)
}
