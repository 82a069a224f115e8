package install

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/safefile"
	"github.com/bwrapkit/bwrapkit/locate"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// FetchError says no source delivered the pinned binary. Nothing was changed.
type FetchError struct {
	Version  string
	SHA256   string
	Failures []*SourceError // in the order tried
}

func (e *FetchError) Error() string {
	var reasons []string
	for _, failure := range e.Failures {
		reasons = append(reasons, failure.Error())
	}
	message := fmt.Sprintf("no source delivered bwrap %s (sha256 %s): %s", e.Version, e.SHA256, strings.Join(reasons, "; "))
	if !e.Unreachable() {
		message += " (wrong bytes mean an attack or a bad manifest: no other source or method was tried)"
	}
	return message
}

func (e *FetchError) Unwrap() []error {
	errs := make([]error, len(e.Failures))
	for i, failure := range e.Failures {
		errs[i] = failure
	}
	return errs
}

// Unreachable reports whether every source failed to deliver any verdict on its bytes.
func (e *FetchError) Unreachable() bool {
	for _, failure := range e.Failures {
		if !failure.Unreachable {
			return false
		}
	}
	return len(e.Failures) > 0
}

func installPinned(ctx context.Context, opts Options) (Result, error) {
	if err := opts.Artifact.validate(); err != nil {
		return Result{}, &ManifestError{err}
	}
	return installVerified(ctx, opts, Pinned, fetchPinned)
}

// fetchFunc returns a temp file in <home>/versions holding the verified binary.
type fetchFunc func(ctx context.Context, opts Options, artifact Artifact) (string, error)

// installVerified is every install of a pinned binary, whatever delivers its bytes: the
// home is prepared and locked, an active pin is left alone, and the verified file is
// placed, probed at its final path and activated, or nothing changes.
func installVerified(ctx context.Context, opts Options, method Method, fetch fetchFunc) (Result, error) {
	artifact := opts.Artifact
	if err := prepareHome(opts.Home); err != nil {
		return Result{}, err
	}
	unlock, err := lockHome(ctx, opts.Home, func(name string) {
		opts.Progress.Note("waiting for another installer to release " + name)
	})
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	sweepStale(opts.Home)

	result := Result{Method: method, Path: locate.ManagedPath(opts.Home), SHA256: artifact.SHA256, Version: artifact.Version}
	// Checked under the lock: a concurrent installer may just have put this pin in place.
	if !opts.Force && isActive(opts.Home, artifact) {
		opts.Progress.Note(fmt.Sprintf("bwrap %s (sha256 %s) is already installed at %s", artifact.Version, artifact.ID(), result.Path))
		return result, nil
	}

	verified, err := fetch(ctx, opts, artifact)
	if err != nil {
		return Result{}, err
	}
	defer os.Remove(verified) // a no-op once it has been renamed into place
	undo, err := placeVersion(opts.Home, artifact, verified)
	if err != nil {
		return Result{}, err
	}
	// Probed at its final path, so the probe cache entry is the one `run` will look up
	// for the managed bwrap.
	if err := checkRuns(ctx, versionPath(opts.Home, artifact), artifact); err != nil {
		undo()
		return Result{}, err
	}
	if err := activate(opts.Home, artifact); err != nil {
		undo()
		return Result{}, err
	}
	result.Changed = true
	opts.Progress.Note(fmt.Sprintf("installed bwrap %s (sha256 %s) at %s", artifact.Version, artifact.ID(), result.Path))
	return result, nil
}

// checkRuns proves the verified binary is a bwrap this host can run and bwrapkit can use.
func checkRuns(ctx context.Context, binary string, artifact Artifact) error {
	features, err := probeRetrying(ctx, binary)
	if err != nil {
		return &LocalError{fmt.Errorf("the verified bwrap %s does not run on this host: %w", artifact.Version, err)}
	}
	if missing := features.Missing(); len(missing) > 0 {
		return fmt.Errorf("the pinned bwrap %s lacks options bwrapkit needs: --%s (pin a newer bwrap)", artifact.Version, strings.Join(missing, ", --"))
	}
	if features.Version != "" && features.Version != artifact.Version {
		return &ManifestError{fmt.Errorf("the pinned binary reports version %s, the manifest says %s", features.Version, artifact.Version)}
	}
	return nil
}

// fetchPinned tries each source in order and returns a temp file holding the verified
// binary. A source that cannot be reached is remembered and the next one tried; one that
// delivers wrong bytes ends the search.
func fetchPinned(ctx context.Context, opts Options, artifact Artifact) (string, error) {
	fetchErr := &FetchError{Version: artifact.Version, SHA256: artifact.SHA256}
	for _, source := range artifact.Sources {
		verified, err := trySource(ctx, opts, artifact, source)
		if err == nil {
			return verified, nil
		}
		var failure *SourceError
		if !errors.As(err, &failure) {
			return "", err // the host or the deadline, not the source
		}
		fetchErr.Failures = append(fetchErr.Failures, failure)
		if !failure.Unreachable {
			break
		}
		opts.Progress.Note(failure.Error())
	}
	return "", fetchErr
}

// trySource streams one source through the archive reader into a temp file in
// <home>/versions and verifies it against the pin.
func trySource(ctx context.Context, opts Options, artifact Artifact, source Source) (verified string, err error) {
	sourceCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The watchdog also covers the wait for the first byte: a server that accepts and
	// never answers is a stall.
	watchdog := time.AfterFunc(opts.StallLimit, func() {
		cancel(&StallError{URL: source.URL, Limit: opts.StallLimit})
	})
	defer watchdog.Stop()

	opts.Progress.Note("downloading " + source.URL)
	stream, err := open(sourceCtx, opts.Client, source.URL, opts.MaxDownload)
	if err != nil {
		return "", blame(ctx, sourceCtx, source, nil, err)
	}
	defer stream.Close()
	meter := opts.Progress.Transfer(source.URL, stream.total)
	defer meter.Close()
	stream.onRead = func(chunk []byte) {
		watchdog.Reset(opts.StallLimit)
		meter.Write(chunk)
	}
	stream.onEOF = func() { watchdog.Stop() }

	temp, err := createTemp(filepath.Join(opts.Home, versionsDir), tempPrefix, "", 0o700)
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			temp.Close()
			os.Remove(temp.Name())
		}
	}()
	hasher := sha256.New()
	written, err := extraction{
		member:     source.Member,
		out:        io.MultiWriter(temp, hasher),
		limit:      artifact.Size,
		spool:      func() (*os.File, error) { return createTemp(opts.Home, spoolPrefix, ".zip", 0o600) },
		spoolLimit: opts.MaxDownload,
	}.run(sourceCtx, stream)
	if err != nil {
		return "", blame(ctx, sourceCtx, source, stream, err)
	}
	if sum := hex.EncodeToString(hasher.Sum(nil)); written != artifact.Size || sum != artifact.SHA256 {
		return "", &SourceError{URL: source.URL, Err: contentErrorf(
			"pin mismatch: got %d bytes with sha256 %s, pinned %d bytes with sha256 %s", written, sum, artifact.Size, artifact.SHA256)}
	}
	return sealTemp(temp)
}

// blame decides whose fault a failed source is: the deadline's (abort), this host's
// (abort), the network's (try the next source) or the bytes' (stop, loudly).
func blame(ctx, sourceCtx context.Context, source Source, stream *download, err error) error {
	var stall *StallError
	var local *LocalError
	var refused *safefile.Error
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("gave up while fetching %s: %w", source.URL, ctx.Err())
	case errors.As(context.Cause(sourceCtx), &stall):
		return &SourceError{URL: source.URL, Unreachable: true, Err: stall}
	case stream != nil && stream.readErr != nil:
		return &SourceError{URL: source.URL, Unreachable: true, Err: fmt.Errorf(
			"transfer broke off after %d of %s: %w", stream.read, describeTotal(stream.total), stream.readErr)}
	case errors.As(err, &local):
		return err
	case errors.As(err, &refused):
		return err // a planted FIFO or link in a mirror: bad input, not a missing source
	}
	var content *ContentError
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err // the URL is already in the message once
	}
	return &SourceError{URL: source.URL, Unreachable: !errors.As(err, &content), Err: err}
}

func describeTotal(total int64) string {
	if total < 0 {
		return "an unknown number of bytes"
	}
	return fmt.Sprintf("%d bytes", total)
}

// probeRetrying retries a probe that failed with ETXTBSY: a fork elsewhere in this process
// may briefly hold an inherited copy of the just-closed write descriptor (Go issue 22315).
func probeRetrying(ctx context.Context, binary string) (sandbox.Features, error) {
	for attempt := 0; ; attempt++ {
		features, err := sandbox.Probe(ctx, binary)
		if !errors.Is(err, syscall.ETXTBSY) || attempt == 20 {
			return features, err
		}
		select {
		case <-ctx.Done():
			return features, err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// sealTemp makes a fully written temp file durable and executable (0755) and closes it:
// the last step before its hash is trusted and it is placed.
func sealTemp(temp *os.File) (string, error) {
	if err := temp.Sync(); err != nil {
		return "", &LocalError{fmt.Errorf("syncing %s: %w", temp.Name(), err)}
	}
	if err := temp.Close(); err != nil {
		return "", &LocalError{fmt.Errorf("closing %s: %w", temp.Name(), err)}
	}
	if err := os.Chmod(temp.Name(), 0o755); err != nil {
		return "", &LocalError{err}
	}
	return temp.Name(), nil
}
