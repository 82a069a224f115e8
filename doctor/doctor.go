package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ids lists every check in the order reports print them.
var ids = []string{
	"platform", "bwrap.found", "bwrap.permissions", "bwrap.version", "bwrap.features", "userns", "launch",
	"selftest.launch-proof", "selftest.workdir-write", "selftest.outside-write", "selftest.git-readonly",
	"selftest.env-clear", "selftest.fd-isolation", "selftest.secrets-hidden", "selftest.network",
	"selftest.proc-isolation", "selftest.capabilities", "selftest.timeout-kill", "selftest.nested-userns",
}

// IDs returns every check id, in report order.
func IDs() []string { return slices.Clone(ids) }

const (
	factTimeout        = 10 * time.Second // a few stat calls and two bwrap probes of 5s each at most
	launchCheckTimeout = 20 * time.Second // launchBound for bwrap, plus the probe
	selftestTimeout    = 20 * time.Second
	killTimeout        = 30 * time.Second // three attempts, the longest of 5s, plus teardown
)

// specs wires every check to the session, with what it needs.
func (s *session) specs() []Spec {
	launch := []string{"launch"}
	return []Spec{
		{ID: "platform", Timeout: factTimeout, Run: s.checkPlatform},
		{ID: "bwrap.found", Needs: []string{"platform"}, Timeout: factTimeout, Run: s.checkFound},
		{ID: "bwrap.permissions", Needs: []string{"bwrap.found"}, Timeout: factTimeout, Run: s.checkPermissions},
		{ID: "bwrap.version", Needs: []string{"bwrap.found"}, Timeout: factTimeout, Run: s.checkVersion},
		{ID: "bwrap.features", Needs: []string{"bwrap.version"}, Timeout: factTimeout, Run: s.checkFeatures},
		{ID: "userns", Needs: []string{"platform"}, Timeout: factTimeout, Run: s.checkUserns},
		{ID: "launch", Needs: []string{"bwrap.features"}, Timeout: launchCheckTimeout, Run: s.checkLaunch},
		{ID: "selftest.launch-proof", Needs: launch, Timeout: selftestTimeout, Run: s.checkLaunchProof},
		{ID: "selftest.workdir-write", Needs: launch, Timeout: selftestTimeout, Run: s.checkWorkdirWrite},
		{ID: "selftest.outside-write", Needs: launch, Timeout: selftestTimeout, Run: s.checkOutsideWrite},
		{ID: "selftest.git-readonly", Needs: launch, Timeout: selftestTimeout, Run: s.checkGitReadonly},
		{ID: "selftest.env-clear", Needs: launch, Timeout: selftestTimeout, Run: s.checkEnvClear},
		{ID: "selftest.fd-isolation", Needs: launch, Timeout: selftestTimeout, Run: s.checkFDIsolation},
		{ID: "selftest.secrets-hidden", Needs: launch, Timeout: selftestTimeout, Run: s.checkSecretsHidden},
		{ID: "selftest.network", Needs: launch, Timeout: selftestTimeout, Run: s.checkNetwork},
		{ID: "selftest.proc-isolation", Needs: launch, Timeout: selftestTimeout, Run: s.checkProcIsolation},
		{ID: "selftest.capabilities", Needs: launch, Timeout: selftestTimeout, Run: s.checkCapabilities},
		{ID: "selftest.timeout-kill", Needs: launch, Timeout: killTimeout, Run: s.checkTimeoutKill},
		{ID: "selftest.nested-userns", Needs: launch, Timeout: selftestTimeout, Run: s.checkNestedUserns},
	}
}

// UnknownCheckError is a --check id that names no check.
type UnknownCheckError struct {
	ID string
}

func (e *UnknownCheckError) Error() string {
	return fmt.Sprintf("unknown check %q (known: %s)", e.ID, strings.Join(ids, ", "))
}

// selectSpecs keeps the wanted checks and everything they need, in the original order.
func selectSpecs(specs []Spec, wanted []string) ([]Spec, error) {
	if len(wanted) == 0 {
		return specs, nil
	}
	byID := make(map[string]Spec, len(specs))
	for _, spec := range specs {
		byID[spec.ID] = spec
	}
	keep := map[string]bool{}
	var add func(id string) error
	add = func(id string) error {
		spec, ok := byID[id]
		if !ok {
			return &UnknownCheckError{ID: id}
		}
		if keep[id] {
			return nil
		}
		keep[id] = true
		for _, need := range spec.Needs {
			if err := add(need); err != nil {
				return err
			}
		}
		return nil
	}
	for _, id := range wanted {
		if err := add(id); err != nil {
			return nil, err
		}
	}
	var selected []Spec
	for _, spec := range specs {
		if keep[spec.ID] {
			selected = append(selected, spec)
		}
	}
	return selected, nil
}

// Run runs the checks cfg selects and reports. The only error is a bad configuration (an
// *UnknownCheckError); everything the host does wrong is in the report. The self-tests'
// temporary files are gone when Run returns.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	s := newSession(cfg)
	specs, err := selectSpecs(s.specs(), cfg.Checks)
	if err != nil {
		return Report{}, err
	}
	began := cfg.Now()
	checks := runAll(ctx, specs, cfg.Parallel)
	s.close()
	return s.report(checks, began, cfg.Now()), nil
}
