package doctor

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/bwrapkit/bwrapkit/sandbox"
)

// probedBwrap is what the bwrap in use says of itself, read once per doctor: its features,
// parsed as sandbox.Probe parses them (so the doctor decides as `bwrapkit run` does), and the
// --help text itself, which explains a binary that is not bwrap (a setuid refusal, say). The
// doctor reads the binary rather than the probe cache: it reports what the file does now.
type probedBwrap struct {
	features sandbox.Features
	help     string
	err      error
}

const (
	bwrapProbeTimeout = 5 * time.Second // each of --help and --version: an impostor may hang
	bwrapProbeMax     = 64 << 10        // an impostor may print without end
)

func probeBwrap(path string) probedBwrap {
	if path == "" {
		return probedBwrap{err: fmt.Errorf("no bwrap located")}
	}
	// Side by side: two short-lived processes, so the wall time is one.
	var version string
	var versionErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		version, versionErr = bwrapOutput(path, "--version")
	}()
	help, helpErr := bwrapOutput(path, "--help")
	<-done
	probed := probedBwrap{help: help}
	switch {
	case helpErr != nil && help == "":
		probed.err = fmt.Errorf("%s --help: %w", path, helpErr)
	case versionErr != nil && version == "":
		probed.err = fmt.Errorf("%s --version: %w", path, versionErr)
	default:
		probed.features = sandbox.ParseFeatures(help, version)
	}
	return probed
}

// bwrapOutput runs bwrap with one argument, stdin the null device, and returns stdout and
// stderr together (old bwraps print --help on stderr), bounded in time and size.
func bwrapOutput(path, arg string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), bwrapProbeTimeout)
	defer cancel()
	var out cappedBuffer
	cmd := exec.CommandContext(ctx, path, arg)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	return out.String(), err
}

// cappedBuffer keeps the first bwrapProbeMax bytes written to it.
type cappedBuffer struct{ bytes.Buffer }

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := bwrapProbeMax - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
