package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/doctor/selftest"
)

// factIDs are the checks before the self-tests, in report order.
var factIDs = [...]string{"platform", "bwrap.found", "bwrap.permissions", "bwrap.version", "bwrap.features", "userns", "launch", "homes"}

// IDs returns every check id, in report order.
func IDs() []string {
	ids := slices.Clone(factIDs[:])
	for _, test := range selftest.Tests() {
		ids = append(ids, test.ID)
	}
	return ids
}

const (
	factTimeout        = 10 * time.Second // a few stat calls and two bwrap probes of 5s each at most
	launchCheckTimeout = 45 * time.Second // the launch bound for bwrap and its one retry, plus the probe
)

// specs wires every check to the session, with what it needs: the facts, then the launch,
// then every self-test after the launch.
func (s *session) specs() []Spec {
	specs := []Spec{
		{ID: "platform", Timeout: factTimeout, Run: s.checkPlatform},
		{ID: "bwrap.found", Needs: []string{"platform"}, Timeout: factTimeout, Run: s.checkFound},
		{ID: "bwrap.permissions", Needs: []string{"bwrap.found"}, Timeout: factTimeout, Run: s.checkPermissions},
		{ID: "bwrap.version", Needs: []string{"bwrap.found"}, Timeout: factTimeout, Run: s.checkVersion},
		{ID: "bwrap.features", Needs: []string{"bwrap.version"}, Timeout: factTimeout, Run: s.checkFeatures},
		{ID: "userns", Needs: []string{"platform"}, Timeout: factTimeout, Run: s.checkUserns},
		{ID: "launch", Needs: []string{"bwrap.features"}, Timeout: launchCheckTimeout, Run: s.checkLaunch},
		{ID: "homes", Timeout: factTimeout, Run: s.checkHomes},
	}
	for _, test := range selftest.Tests() {
		specs = append(specs, Spec{ID: test.ID, Needs: []string{"launch"}, Timeout: test.Timeout, Run: s.selftest(test)})
	}
	return specs
}

// selectedTests are the self-tests among specs: only their parts go into the shared launch.
func selectedTests(specs []Spec) []selftest.Test {
	var tests []selftest.Test
	for _, test := range selftest.Tests() {
		if slices.ContainsFunc(specs, func(spec Spec) bool { return spec.ID == test.ID }) {
			tests = append(tests, test)
		}
	}
	return tests
}

// UnknownCheckError is a --check id that names no check.
type UnknownCheckError struct {
	ID string
}

func (e *UnknownCheckError) Error() string {
	return fmt.Sprintf("unknown check %q (known: %s)", e.ID, strings.Join(IDs(), ", "))
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
func Run(ctx context.Context, cfg Config) (report.Report, error) {
	cfg = cfg.withDefaults()
	s := newSession(cfg)
	specs, err := selectSpecs(s.specs(), cfg.Checks)
	if err != nil {
		return report.Report{}, err
	}
	s.tests = selectedTests(specs)
	s.shared = selftest.NewShared(s.tests)
	s.joint = selftest.NewJoint(s.tests)
	var stop context.CancelFunc
	s.ctx, stop = context.WithCancel(ctx)
	defer stop()
	s.stopBeside = stop
	began := cfg.Now()
	if makesUserNamespaces(s.host.get().Kind) {
		// Before any check starts a process: the user-namespace probe maps its ids through
		// files Go's os/exec opens without close-on-exec, and Go lets forks run at the same
		// time, so a sandbox launched by a concurrent check inherited one (the fd-isolation
		// self-test saw /proc/PID/setgroups inside).
		s.usernsErr.get()
	}
	checks := runAll(ctx, specs, cfg.Parallel)
	// Every beside run's verdict was read or abandoned by its spec: one still going (its
	// check gave up on it) is ended before the scene goes.
	stop()
	s.besideRuns.Wait()
	s.close()
	return s.report(checks, began, cfg.Now()), nil
}
