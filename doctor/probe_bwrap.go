package doctor

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/capped"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// probedBwrap is what the bwrap in use says of itself: its features, read by the sandbox's
// own Prober (so the doctor decides as `bwrapkit run` does, and a warm probe cache costs no
// bwrap start at all), and, only for a binary that is not bwrap or does not answer, the
// --help text itself, which explains it (a setuid refusal, say). The cache is keyed by the
// file's identity (device, inode, size, mtime, ctime), so a replaced or modified binary is
// probed again, and a cached claim that an option is missing is proven live; what the
// cache says is thus what this very file said.
type probedBwrap struct {
	features sandbox.Features
	help     string
	err      error
}

const bwrapProbeTimeout = 5 * time.Second // each of --help and --version: an impostor may hang

func probeBwrap(prober sandbox.Prober, path string) probedBwrap {
	if path == "" {
		return probedBwrap{err: fmt.Errorf("no bwrap located")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*bwrapProbeTimeout)
	defer cancel()
	features, err := prober.Probe(ctx, path)
	if err == nil && features.IsBwrap() {
		return probedBwrap{features: features}
	}
	// Not bwrap, or no answer: its own words are the evidence, so read --help once more
	// (only on this failing path; the prober keeps none of the text).
	help, _ := bwrapOutput(path, "--help")
	if err != nil {
		return probedBwrap{help: help, err: err}
	}
	return probedBwrap{features: features, help: help}
}

// bwrapOutput runs bwrap with one argument, stdin the null device, and returns stdout and
// stderr together (old bwraps print --help on stderr), bounded in time and size.
func bwrapOutput(path, arg string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), bwrapProbeTimeout)
	defer cancel()
	out := capped.NewHead(cancel) // an impostor may print without end
	cmd := exec.CommandContext(ctx, path, arg)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	return out.String(), err
}
