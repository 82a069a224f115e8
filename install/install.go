package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// Method is how bwrap gets installed.
type Method string

const (
	// Auto tries Embedded (when the build carries a bwrap), then Pinned, then Package when
	// no pinned source could be reached. A source that delivered wrong bytes is not
	// "unreachable": that failure is final. An embedded copy that is not the pin is skipped.
	Auto Method = "auto"
	// Embedded installs the bwrap this build carries, checked against the pin: no network.
	Embedded Method = "embedded"
	// Pinned installs the manifest's binary into the home.
	Pinned Method = "pinned"
	// Package asks the host's package manager for bubblewrap.
	Package Method = "package"
)

// ParseMethod reads a --method value.
func ParseMethod(name string) (Method, error) {
	switch method := Method(name); method {
	case Auto, Embedded, Pinned, Package:
		return method, nil
	}
	return "", fmt.Errorf("unknown method %q (want auto, embedded, pinned or package)", name)
}

// Defaults for Options fields left zero.
const (
	DefaultStallLimit  = 30 * time.Second
	DefaultMaxDownload = 256 << 20
)

// Options is one install. The caller bounds the whole operation with its context.
type Options struct {
	Home     string   // bwrapkit's home: <Home>/bin/bwrap is the managed install
	Artifact Artifact // this machine's pin (after any mirror); not used by Package
	Method   Method
	Force    bool // reinstall even when the pin is already active
	// Embedded is the bwrap this build carries (EmbeddedBwrap), nil for none; tests set
	// other bytes. It is installed only if it is the Artifact's pinned binary.
	Embedded []byte

	// StallLimit aborts a download that delivers no bytes for this long.
	StallLimit time.Duration
	// MaxDownload bounds the bytes read from one source (the archive, not the member).
	MaxDownload int64
	Client      *http.Client

	// Environ is the environment package managers run with, and its PATH is where they
	// are looked for. Nil means this process's environment.
	Environ []string
	// PackageDirs are where a package manager's bwrap may land and be used from (as
	// locate's Query.SystemDirs); nil means /usr, /bin and /sbin. Tests name their own.
	PackageDirs []string
	// Geteuid decides whether the package manager may run; nil means os.Geteuid.
	Geteuid func() int
	// PackageOutput receives the package manager's stdout and stderr; nil discards them.
	PackageOutput io.Writer
	Progress      Progress
}

func (o Options) withDefaults() Options {
	if o.Method == "" {
		o.Method = Auto
	}
	if o.StallLimit <= 0 {
		o.StallLimit = DefaultStallLimit
	}
	if o.MaxDownload <= 0 {
		o.MaxDownload = DefaultMaxDownload
	}
	if o.Client == nil {
		o.Client = newHTTPClient()
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.Geteuid == nil {
		o.Geteuid = os.Geteuid
	}
	if o.PackageOutput == nil {
		o.PackageOutput = io.Discard
	}
	if o.Progress == nil {
		o.Progress = silent{}
	}
	return o
}

// Result is what an install left in place.
type Result struct {
	Method  Method `json:"method"`
	Path    string `json:"path"` // the bwrap to use: <home>/bin/bwrap, or the package's
	SHA256  string `json:"sha256"`
	Version string `json:"version"`
	Changed bool   `json:"changed"`
}

// Install installs bwrap by opts.Method. On any failure the previous state is untouched.
func Install(ctx context.Context, opts Options) (Result, error) {
	opts = opts.withDefaults()
	switch opts.Method {
	case Pinned:
		return installPinned(ctx, opts)
	case Package:
		return installPackage(ctx, opts)
	case Embedded:
		return installEmbedded(ctx, opts)
	case Auto:
		if len(opts.Embedded) > 0 {
			result, err := installEmbedded(ctx, opts)
			var mismatch *EmbeddedMismatchError
			if !errors.As(err, &mismatch) {
				return result, err // installed, or a failure of this host no source would avoid
			}
			opts.Progress.Note(mismatch.Error() + "; ignoring it and trying the pinned sources")
		}
		result, err := installPinned(ctx, opts)
		var fetchErr *FetchError
		if err == nil || !errors.As(err, &fetchErr) || !fetchErr.Unreachable() {
			return result, err
		}
		opts.Progress.Note("no pinned source could be reached; trying the package manager")
		result, packageErr := installPackage(ctx, opts)
		if packageErr != nil {
			// The pinned bwrap first: the package manager's is the distribution's own
			// version (Debian 12's 0.8.0 lacks --overlay and --bind-fd).
			return Result{}, fmt.Errorf("%w. %s. Or, with the distribution's older bubblewrap: %w", err, PinnedAdvice(opts.Artifact), packageErr)
		}
		opts.Progress.Note("installed the distribution's bubblewrap, not the pin. " + PinnedAdvice(opts.Artifact))
		return result, nil
	}
	_, err := ParseMethod(string(opts.Method))
	return Result{}, err
}

// PinnedAdvice says how to get the pinned bwrap when none of its sources can be reached
// from here: fetch one source's file where the network allows, and install from a
// directory holding it (the pin is the binary's hash, so any copy of the file will do).
func PinnedAdvice(artifact Artifact) string {
	if len(artifact.Sources) == 0 {
		return "To get the pinned bwrap, run `bwrapkit install --mirror DIR` with DIR holding its release file"
	}
	source := artifact.Sources[0].URL
	return fmt.Sprintf("To get the pinned bwrap %s instead: fetch %s where the network reaches it, put it in a directory DIR here, and run `bwrapkit install --mirror DIR` (checked against the pin, no network needed)", artifact.Version, source)
}
