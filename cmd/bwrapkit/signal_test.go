package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strings"

	"math/rand/v2"
	"os/exec"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// TestLiveEarlySignalUnderInheritedIgnore: a shell starts `bwrapkit run ... &` and nohup
// with SIGINT or SIGHUP ignored. A signal in the run's first milliseconds must still end
// it with 128+N, never be dropped while the command runs on.
func TestLiveEarlySignalUnderInheritedIgnore(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	environ, _ := attackEnv(t, bwrap)
	workdir := livetest.TempDir(t)
	// Ignored here, so inherited ignored by bwrapkit, as from a shell; this test is not
	// parallel, so nothing else starts a child meanwhile.
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP)
	t.Cleanup(func() { signal.Reset(syscall.SIGINT, syscall.SIGHUP) })

	const trials, concurrent = 300, 6
	var lost, wrong atomic.Int32
	var wg sync.WaitGroup
	for worker := range concurrent {
		wg.Go(func() {
			for trial := worker; trial < trials; trial += concurrent {
				sig := []syscall.Signal{syscall.SIGINT, syscall.SIGHUP}[trial%2]
				delay := time.Duration(rand.Int64N(int64(15 * time.Millisecond)))
				status, finished, said := signalDuringRun(t, environ, workdir, sig, delay)
				switch {
				case !finished:
					lost.Add(1)
					t.Logf("%v after %v: lost (the command ran on)", sig, delay)
				case status != 128+int(sig):
					wrong.Add(1)
					t.Logf("%v after %v: exit status %d, want %d; bwrapkit said: %s", sig, delay, status, 128+int(sig), said)
				}
			}
		})
	}
	wg.Wait()
	// The protection is that no early signal is lost. A few runs (3 in 300 under -race on
	// 2 cores) ended 125 instead of 128+N; the cause was the proxy socket sweep in
	// netproxy (TestListenRemovesAbandonedSocketDirs), not the signal, and 0 of 1,500
	// ended so after its fix. A wrong status is still only logged, with what bwrapkit
	// said: it is not this test's protection.
	if lost.Load() != 0 {
		t.Errorf("of %d early signals under an inherited SIG_IGN, %d were lost (and %d ended the run with the wrong status)", trials, lost.Load(), wrong.Load())
	} else if wrong.Load() != 0 {
		t.Logf("of %d early signals, 0 were lost; %d ended the run with 125 instead of 128+N", trials, wrong.Load())
	}
}

// programRunning waits until the Go runtime's init trace shows os/signal initialised: by
// then the program's own code could have acted (before it, the kernel drops a signal that
// is ignored, whatever the program would do); without earlysignal, handlers came only
// later, in main.
func programRunning(stderr io.Reader, rest *syncBuffer) bool {
	scanner := bufio.NewScanner(stderr)
	running := false
	for scanner.Scan() {
		if strings.HasPrefix(scanner.Text(), "init os/signal ") {
			running = true
			break
		}
	}
	go func() {
		_, _ = io.Copy(rest, stderr)
		rest.close()
	}()
	return running
}

// syncBuffer is what bwrapkit said after its init trace, read once it is closed.
type syncBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{}
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) close() { close(b.done) }

// said is bwrapkit's stderr after the trace (the trace's own lines dropped), waiting at
// most a second for its end.
func (b *syncBuffer) said() string {
	select {
	case <-b.done:
	case <-time.After(time.Second):
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var lines []string
	for line := range strings.Lines(b.buf.String()) {
		if !strings.HasPrefix(line, "init ") {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	return strings.Join(lines, " | ")
}

// signalDuringRun starts `bwrapkit run -- sleep 30`, signals it after delay, and waits
// 10 s for it to end; one that does not is killed with its process group.
func signalDuringRun(t *testing.T, environ []string, workdir string, sig syscall.Signal, delay time.Duration) (int, bool, string) {
	cmd := exec.Command(builtBinary, "run", "--workdir", workdir, "--", "sleep", "30")
	cmd.Env = append(environ, "GODEBUG=inittrace=1")
	// A pipe of the test's own: Wait would close a StderrPipe and lose its last words.
	stderr, stderrWrite, err := os.Pipe()
	if err != nil {
		t.Error(err)
		return 0, true, ""
	}
	defer stderr.Close()
	cmd.Stderr = stderrWrite
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	stderrWrite.Close()
	if err != nil {
		t.Error(err)
		return 0, true, ""
	}
	rest := &syncBuffer{done: make(chan struct{})}
	if !programRunning(stderr, rest) {
		t.Errorf("bwrapkit (pid %d) never initialised os/signal", cmd.Process.Pid)
	}
	time.Sleep(delay)
	_ = cmd.Process.Signal(sig)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		// Killed by the signal itself (it came before bwrapkit's handler, when nothing had
		// started) is what a shell reports as 128+N too.
		if exitErr, ok := err.(*exec.ExitError); ok {
			if status := exitErr.Sys().(syscall.WaitStatus); status.Signaled() {
				return 128 + int(status.Signal()), true, rest.said()
			}
			return exitErr.ExitCode(), true, rest.said()
		}
		return 0, true, rest.said()
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		return 0, false, rest.said()
	}
}
