package doctor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/diagnose"
	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/doctor/selftest"
	"github.com/bwrapkit/bwrapkit/locate"
	"github.com/bwrapkit/bwrapkit/platform"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// session holds one doctor run's facts. Several checks need the same facts (the host, the
// located bwrap), so each is computed once, on first use, by whichever check gets there
// first; the runner's dependencies only decide what is skipped.
type session struct {
	cfg    Config
	prober *sandbox.Prober // the bwrap.* checks' and the self-tests' runs'

	host      *lazy[platform.Host]
	located   *lazy[located]
	binary    *lazy[binaryFacts]
	usernsErr *lazy[syscall.Errno]
	bwrap     *lazy[probedBwrap]
	owner     *lazy[owned]
	scene     *lazy[sceneOrError]

	// shared is the launch the planned self-tests share (set once the checks are selected),
	// joint the run net-allow and workdir-vetting share.
	shared *selftest.Shared
	joint  *selftest.Joint

	mu       sync.Mutex
	launched selftest.Launched // set by the launch check, read by the self-tests

	// beside are the selected self-tests that run beside the launch's run (Test.Beside):
	// the launch check starts them, each one's spec reports it after the launch. ctx is
	// the doctor's; stopBeside ends them when the launch fails, since their specs are then
	// skipped, and Run waits for them (besideRuns) before the scene goes.
	tests      []selftest.Test
	ctx        context.Context
	stopBeside context.CancelFunc
	beside     map[string]*besideRun
	besideRuns sync.WaitGroup
}

// besideRun is one self-test run beside the launch: its verdict once done is closed.
type besideRun struct {
	done  chan struct{}
	check report.Check
}

type located struct {
	result locate.Result
	err    error
}

type sceneOrError struct {
	scene *selftest.Scene
	err   error
}

func newSession(cfg Config) *session {
	s := &session{cfg: cfg}
	s.host = newLazy(func() platform.Host {
		return platform.Detect(cfg.Root, cfg.Getenv, cfg.GOOS, cfg.GOARCH)
	})
	s.located = newLazy(func() located {
		result, err := locate.Find(cfg.Query, cfg.FS)
		return located{result, err}
	})
	s.binary = newLazy(func() binaryFacts {
		found := s.located.get()
		if found.err != nil {
			return binaryFacts{Err: found.err}
		}
		return inspectBinary(found.result.Path)
	})
	s.usernsErr = newLazy(func() syscall.Errno { return tryUserNamespace(cfg.Probe) })
	// One prober for the bwrap.* checks and every self-test's run: it remembers what it
	// learnt, so the runs neither read the probe cache again nor, where there is no cache
	// to write (a HOME that is not writable), run bwrap's --help and --version again each.
	prober := sandbox.DefaultProber(cfg.Environ)
	s.prober = &prober
	s.bwrap = newLazy(func() probedBwrap { return probeBwrap(prober, s.bwrapPath()) })
	s.owner = newLazy(func() owned { return queryOwner(s.bwrapPath()) })
	s.scene = newLazy(func() sceneOrError {
		now := cfg.Now()
		for _, home := range s.homes() {
			selftest.Sweep(home, selftest.SecretPrefix, now)
		}
		candidates := selftest.Candidates(cfg.Getenv)
		if cfg.TempDir != "" {
			candidates = []selftest.Candidate{{Anchor: cfg.TempDir, Base: cfg.TempDir}}
		}
		scene, err := selftest.MakeScene(candidates, now)
		return sceneOrError{scene, err}
	})
	return s
}

// bwrapPath is the located bwrap, or "" when there is none.
func (s *session) bwrapPath() string {
	found := s.located.get()
	if found.err != nil {
		return ""
	}
	return found.result.Path
}

// features is what the located bwrap's --help and --version say, read once per doctor.
func (s *session) features() (sandbox.Features, error) {
	if s.bwrapPath() == "" {
		return sandbox.Features{}, errors.New("no bwrap located")
	}
	probed := s.bwrap.get()
	return probed.features, probed.err
}

// selftestEnv is what the launch check and the self-tests run the probe through.
func (s *session) selftestEnv() (*selftest.Env, error) {
	made := s.scene.get()
	if made.err != nil {
		return nil, &selftest.DirError{Err: made.err}
	}
	features, err := s.features()
	if err != nil {
		return nil, err
	}
	return &selftest.Env{Bwrap: s.bwrapPath(), Features: features, Probe: s.cfg.Probe, Keeper: s.cfg.Keeper, Prober: s.prober,
		Environ: s.cfg.Environ, Scene: made.scene, Homes: s.homes(), Shared: s.shared, Joint: s.joint, LaunchBound: s.cfg.LaunchBound}, nil
}

// homes are where a leaked secret would matter: the caller's home ($HOME, as the sandbox's
// policy reads it) and, for root, /root.
func (s *session) homes() []string {
	var homes []string
	if home := s.cfg.Getenv("HOME"); filepath.IsAbs(home) {
		homes = append(homes, filepath.Clean(home))
	}
	if os.Geteuid() == 0 && !slices.Contains(homes, "/root") {
		homes = append(homes, "/root")
	}
	return homes
}

// startBeside starts the selected self-tests that need nothing of the launch, beside
// its run: a healthy doctor's wall time is then its longest run, not the sum of two. Once
// per doctor, and only when Config.Parallel is 4 or more (the default): the launch check
// then stands for its two beside runs too, which take no slot of their own. Each runs
// under its own bound, as its spec would run it.
func (s *session) startBeside(env *selftest.Env) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.beside != nil || s.cfg.Parallel < 4 || s.ctx == nil {
		return
	}
	s.beside = map[string]*besideRun{}
	for _, test := range s.tests {
		if !test.Beside {
			continue
		}
		run := &besideRun{done: make(chan struct{})}
		s.beside[test.ID] = run
		s.besideRuns.Add(1)
		go func() {
			defer s.besideRuns.Done()
			defer close(run.done)
			run.check = runOne(s.ctx, Spec{ID: test.ID, Timeout: test.Timeout, Run: func(ctx context.Context) report.Check {
				return test.Run(ctx, env, selftest.Launched{})
			}})
		}()
	}
}

// besideVerdict is the verdict of test's run beside the launch, once it is done; false
// when it was not started there.
func (s *session) besideVerdict(ctx context.Context, test selftest.Test) (report.Check, bool) {
	s.mu.Lock()
	run, ok := s.beside[test.ID]
	s.mu.Unlock()
	if !ok {
		return report.Check{}, false
	}
	select {
	case <-run.done:
		return run.check, true
	case <-ctx.Done():
		return abandoned(ctx, test.Timeout), true
	}
}

// selftest runs one self-test in the session's environment, after the launch check, or
// reports the one the launch check started beside its run.
func (s *session) selftest(test selftest.Test) func(context.Context) report.Check {
	return func(ctx context.Context) report.Check {
		if check, ok := s.besideVerdict(ctx, test); ok {
			return check
		}
		env, err := s.selftestEnv()
		if err != nil {
			return selftest.Failed("no self-test environment", err)
		}
		s.mu.Lock()
		launched := s.launched
		s.mu.Unlock()
		if test.Plan != nil {
			return env.Shared.Judge(ctx, test.ID, launched)
		}
		return test.Run(ctx, env, launched)
	}
}

// facts gathers what diagnose.Diagnose decides from.
func (s *session) facts() diagnose.Facts {
	host := s.host.get()
	facts := diagnose.Facts{
		Host:   host,
		Root:   os.Geteuid() == 0,
		Distro: s.cfg.Getenv("WSL_DISTRO_NAME"),
		Bwrap:  s.bwrapPath(),
		Setuid: s.binary.get().Setuid,
	}
	if makesUserNamespaces(host.Kind) {
		facts.UsernsErr = s.usernsErr.get()
	}
	if facts.Bwrap != "" {
		facts.AppArmorProfile, _ = platform.AppArmorProfileGrantsUserns(s.cfg.Root, facts.Bwrap)
	}
	return facts
}

func (s *session) close() {
	if made, ok := s.scene.peek(); ok && made.err == nil {
		made.scene.Remove()
	}
}

// makesUserNamespaces: on these kinds of host the doctor asks the kernel for a user
// namespace (elsewhere there is no such kernel to ask).
func makesUserNamespaces(kind string) bool {
	return kind == platform.KindLinux || kind == platform.KindWSL2
}

// tryUserNamespace makes a new user namespace as bwrap would, and returns the kernel's
// errno (0: it worked). Only with a probe configured: a doctor without one (a unit test of
// the facts) does not touch the kernel.
func tryUserNamespace(command probe.Command) syscall.Errno {
	if len(command.Argv) == 0 {
		return 0
	}
	return probe.UserNamespaceErrno()
}

// report reads only facts that are already computed: a fact whose check hung stays empty.
func (s *session) report(checks []report.Check, began, finished time.Time) report.Report {
	for i, check := range checks {
		if check.RemedyCommands == nil && check.Fix != nil && (check.Status == report.StatusFail || check.Status == report.StatusWarn) {
			checks[i].RemedyCommands = check.Fix.Commands
		}
	}
	r := report.Report{Status: report.Overall(checks), ToolVersion: s.cfg.ToolVersion, Started: began,
		Duration: finished.Sub(began), Checks: checks}
	r.Platform = report.PlatformInfo{OS: s.cfg.GOOS, Arch: s.cfg.GOARCH}
	if host, ok := s.host.peek(); ok {
		r.Platform.Kind, r.Platform.Kernel, r.Platform.Container = host.Kind, host.Kernel, host.Container
	}
	if found, ok := s.located.peek(); ok && found.err == nil {
		r.Bwrap.Path, r.Bwrap.Source = found.result.Path, string(found.result.Source)
	}
	if binary, ok := s.binary.peek(); ok && binary.Err == nil {
		r.Bwrap.Setuid, r.Bwrap.Static = binary.Setuid, binary.Static
	}
	if probed, ok := s.bwrap.peek(); ok && probed.err == nil {
		r.Bwrap.Build = probed.features.Build
	}
	if owner, ok := s.owner.peek(); ok {
		r.Bwrap.Package = owner.pkg
	}
	if version, ok := ParseVersion(r.Bwrap.Build); ok {
		r.Bwrap.Version = version.String()
	}
	return r
}
