package install

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// noNetwork is a client that refuses, and counts, every request: an embedded install
// must not make one.
func noNetwork() (*http.Client, *atomic.Int32) {
	var requests atomic.Int32
	return &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		requests.Add(1)
		return nil, errors.New("the network is off in this test")
	})}, &requests
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// recordingProgress keeps the notes; transfers are not metered.
type recordingProgress struct{ lines []string }

func (p *recordingProgress) Note(line string) { p.lines = append(p.lines, line) }
func (p *recordingProgress) Transfer(string, int64) io.WriteCloser {
	return silent{}.Transfer("", 0)
}

// TestEmbeddedInstallsWithNoNetwork: the embedded copy (here the host's real bwrap, as
// make dist embeds the pinned one) is verified and installed by auto and by --method
// embedded without one request; its only source is unreachable anyway.
func TestEmbeddedInstallsWithNoNetwork(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	for _, method := range []Method{Auto, Embedded} {
		t.Run(string(method), func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			client, requests := noNetwork()
			opts := testOptions(home, bwrap.artifact(Source{URL: "https://unreachable.invalid/bwrap"}))
			opts.Method, opts.Client, opts.Embedded = method, client, bwrap.data
			result := mustInstall(t, opts)
			if result.Method != Embedded || !result.Changed {
				t.Errorf("result %+v, want method embedded", result)
			}
			assertActive(t, home, opts.Artifact)
			if requests.Load() != 0 {
				t.Errorf("%d requests during an embedded install", requests.Load())
			}
			// Installed already: the same pin from the same bytes changes nothing.
			if again := mustInstall(t, opts); again.Changed {
				t.Errorf("second install changed the home: %+v", again)
			}
		})
	}
}

// TestEmbeddedMismatchFallsThrough: an embedded copy that is not the pin (a corrupted
// build) is refused; auto goes on to the pinned sources, --method embedded fails, and
// nothing of the bad copy is ever written.
func TestEmbeddedMismatchFallsThrough(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	corrupted := bwrap.variant().data
	artifact := bwrap.artifact(Source{URL: writeFile(t, "bwrap", bwrap.data)})

	t.Run("auto", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "home")
		opts := testOptions(home, artifact)
		progress := &recordingProgress{}
		opts.Method, opts.Embedded, opts.Progress = Auto, corrupted, progress
		result := mustInstall(t, opts)
		if result.Method != Pinned {
			t.Errorf("result %+v, want the pinned source after the refused embedded copy", result)
		}
		assertActive(t, home, artifact)
		if !strings.Contains(strings.Join(progress.lines, "\n"), "the embedded bwrap is") {
			t.Errorf("no note of the refused embedded copy: %q", progress.lines)
		}
	})
	t.Run("embedded", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "home")
		opts := testOptions(home, artifact)
		opts.Method, opts.Embedded = Embedded, corrupted
		_, err := Install(context.Background(), opts)
		var mismatch *EmbeddedMismatchError
		if !errors.As(err, &mismatch) || mismatch.GotSize != int64(len(corrupted)) {
			t.Fatalf("want an EmbeddedMismatchError, got %v", err)
		}
		if tree := snapshot(t, home); len(tree) != 0 {
			t.Errorf("a refused embedded copy touched the home: %v", tree)
		}
	})
	t.Run("none", func(t *testing.T) {
		opts := testOptions(filepath.Join(t.TempDir(), "home"), artifact)
		opts.Method = Embedded
		if _, err := Install(context.Background(), opts); !errors.Is(err, ErrNoEmbedded) {
			t.Errorf("want ErrNoEmbedded, got %v", err)
		}
	})
}

// TestOrdinaryBuildEmbedsNothing: `go test` builds without the embedbwrap tag, as `go
// install` does; such a build must behave as before the embedded method existed.
func TestOrdinaryBuildEmbedsNothing(t *testing.T) {
	if embeddedBwrap != "" {
		t.Skip("built with -tags embedbwrap")
	}
	if EmbeddedBwrap() != nil {
		t.Error("EmbeddedBwrap() is not nil")
	}
	if _, ok := DescribeEmbedded(); ok {
		t.Error("DescribeEmbedded() reports a copy")
	}
}
