package doctor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/bwrapkit/bwrapkit/locate"
	"github.com/bwrapkit/bwrapkit/platform"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// session holds one doctor run's facts. Several checks need the same facts (the host, the
// located bwrap), so each is computed once, on first use, by whichever check gets there
// first; the runner's dependencies only decide what is skipped.
type session struct {
	cfg Config

	host      *lazy[platform.Host]
	located   *lazy[located]
	binary    *lazy[binaryFacts]
	usernsErr *lazy[syscall.Errno]
	fixture   *lazy[fixtureOrError]

	mu     sync.Mutex
	launch launchOutcome    // set by the launch check, read by launch-proof
	probed sandbox.Features // set by bwrap.version, for the report
}

type located struct {
	result locate.Result
	err    error
}

type fixtureOrError struct {
	fixture *fixture
	err     error
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
	s.fixture = newLazy(func() fixtureOrError {
		fixture, err := newFixture(cfg.TempDir)
		return fixtureOrError{fixture, err}
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

// features probes the located bwrap (sandbox.Probe caches per binary).
func (s *session) features(ctx context.Context) (sandbox.Features, error) {
	path := s.bwrapPath()
	if path == "" {
		return sandbox.Features{}, errors.New("no bwrap located")
	}
	return sandbox.Probe(ctx, path)
}

// facts gathers what Diagnose decides from.
func (s *session) facts() Facts {
	host := s.host.get()
	facts := Facts{
		Host:      host,
		Root:      os.Geteuid() == 0,
		Distro:    s.cfg.Getenv("WSL_DISTRO_NAME"),
		Bwrap:     s.bwrapPath(),
		Setuid:    s.binary.get().Setuid,
		ProcMasks: ProcMasks(readText(s.cfg.Root, "proc/self/mountinfo")),
	}
	if host.OS == "linux" && host.Kind != platform.KindWSL1 {
		facts.UsernsErr = s.usernsErr.get()
	}
	if facts.Bwrap != "" {
		facts.AppArmorProfile, _ = platform.AppArmorProfileGrantsUserns(s.cfg.Root, facts.Bwrap)
	}
	return facts
}

func (s *session) close() {
	if made, ok := s.fixture.peek(); ok && made.err == nil {
		made.fixture.remove()
	}
}

// ProcMasks lists the mounts stacked on parts of /proc in a mountinfo text. The kernel lets
// a user namespace mount a fresh proc only when nothing of the existing one is hidden, and
// container runtimes hide /proc/kcore, /proc/acpi and others this way. binfmt_misc sits on
// a directory the kernel keeps empty, so it hides nothing.
func ProcMasks(mountinfo string) []string {
	var masks []string
	for _, line := range strings.Split(mountinfo, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		mountPoint := fields[4]
		if strings.HasPrefix(mountPoint, "/proc/") && mountPoint != "/proc/sys/fs/binfmt_misc" {
			masks = append(masks, mountPoint)
		}
	}
	return masks
}

func readText(root fs.FS, name string) string {
	data, err := fs.ReadFile(root, name)
	if err != nil {
		return ""
	}
	return string(data)
}

// tryUserNamespace runs the probe's no-op in a new user namespace, as bwrap would create
// one, and returns the kernel's errno (0: it worked or could not be tried).
func tryUserNamespace(probe ProbeCommand) syscall.Errno {
	if len(probe.Command) == 0 {
		return 0
	}
	return cloneUserNamespace(append(append([]string{}, probe.Command...), "noop"), probe.Env)
}
