package doctor

import (
	"io/fs"
	"os"
	"runtime"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/locate"
	"github.com/bwrapkit/bwrapkit/platform"
)

// Config is everything a doctor run depends on; the zero value of each field means the
// real host (see withDefaults).
type Config struct {
	Query  locate.Query      // which bwrap (see locate.Find)
	FS     locate.FileSystem // default locate.OS{}
	Root   fs.FS             // the host's "/", for platform facts; default platform.HostRoot() (FIFO-safe opens)
	Getenv func(string) string
	// Environ is the caller's environment, as the sandbox's policy is built from it. The
	// doctor adds a canary secret to it that must not reach the sandbox.
	Environ      []string
	GOOS, GOARCH string
	// Probe is how to run the self-test probe inside the sandbox.
	Probe probe.Command
	// Keeper is the executable the self-tests' runs start as their keeper
	// (sandbox.Options.Keeper; bwrapkit doctor: bwrapkit-helper beside it, else itself), so
	// that a doctor killed mid-run leaves no sandbox behind; empty runs them unkept.
	Keeper string
	// HelperNote says why bwrapkit-helper, beside the bwrapkit running the doctor, was
	// passed over as the probe and keeper (it does not serve this build: a helper left
	// from another release): the launch check warns with it. Empty: nothing to say.
	HelperNote string
	// Checks limits the run to these ids and what they need; empty runs every check.
	Checks []string
	// TempDir is where the self-tests' directory is made; empty tries selftest.Candidates
	// of the caller's environment (the user's cache, then $TMPDIR, /var/tmp, /tmp).
	TempDir     string
	ToolVersion string
	// LaunchBound is how long each sandbox's launch may take before it is tried once more
	// with twice the bound; default selftest.DefaultLaunchBound (10s).
	LaunchBound time.Duration
	// Parallel bounds how many checks run at once; default 2*GOMAXPROCS, at least 4. From
	// 4 up the launch check runs timeout-kill's and the joint run beside its own, and
	// counts as one; below, they run after it, each in a slot of its own.
	Parallel int
	Now      func() time.Time
}

func (c Config) withDefaults() Config {
	if c.FS == nil {
		c.FS = locate.OS{}
	}
	if c.Root == nil {
		c.Root = platform.HostRoot()
	}
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.Environ == nil {
		c.Environ = os.Environ()
	}
	if c.GOOS == "" {
		c.GOOS, c.GOARCH = runtime.GOOS, runtime.GOARCH
	}
	if c.Parallel <= 0 {
		c.Parallel = max(4, 2*runtime.GOMAXPROCS(0))
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
