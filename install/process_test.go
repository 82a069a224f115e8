package install

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// helperRequest is what a helper process installs; it travels in the environment.
type helperRequest struct {
	Home       string
	Artifact   Artifact
	StallLimit time.Duration
	Timeout    time.Duration
}

// TestHelperProcess is not a test: it is the installer run as a separate process by the
// tests that kill installers or race them, and by the benchmarks that measure peak RSS.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("GO_WANT_HELPER_PROCESS") != "1" {
		return
	}
	var request helperRequest
	if err := json.Unmarshal([]byte(os.Getenv("BWRAPKIT_HELPER_REQUEST")), &request); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), request.Timeout)
	defer cancel()
	result, err := Install(ctx, Options{Home: request.Home, Artifact: request.Artifact, Method: Pinned, StallLimit: request.StallLimit})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(result)
	os.Exit(0)
}

// helperCommand runs the installer in a child process of the test binary.
func helperCommand(t testing.TB, request helperRequest) *exec.Cmd {
	t.Helper()
	data, err := json.Marshal(request)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GO_WANT_HELPER_PROCESS=1", "BWRAPKIT_HELPER_REQUEST="+string(data))
	return cmd
}

// TestKilledInstaller kills an installer with SIGKILL mid-download, while it holds the
// lock and a partial temp file; the next installer must get the lock, succeed, and sweep
// the leftover.
func TestKilledInstaller(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	home, before := installedHome(t, bwrap)
	next := bwrap.variant()
	archive := buildArchive(t, "tar", entry{name: "bwrap", data: next.data})

	partialSent := make(chan struct{})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	stalling := hijackServer(t, func(conn net.Conn, _ *bufio.ReadWriter) {
		defer conn.Close()
		fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(archive))
		conn.Write(archive[:len(archive)-4096]) // past the peek: the member is being written
		close(partialSent)
		<-release
	})
	artifact := next.artifact(Source{URL: stalling, Member: "bwrap"})
	cmd := helperCommand(t, helperRequest{Home: home, Artifact: artifact, StallLimit: time.Minute, Timeout: time.Minute})
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-partialSent:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the helper never fetched: %s", stderr.String())
	}
	stale := waitForTemp(t, filepath.Join(home, versionsDir))
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("the killed installer's partial file is not there to test with: %v", err)
	}
	if diff := diffTrees(before, snapshot(t, home)); !strings.Contains(diff, tempPrefix) || strings.Count(diff, "\n") != 0 {
		t.Errorf("a killed installer changed more than its temp file:\n%s", diff)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	good := next.artifact(Source{URL: serveBytes(t, "bwrap.tar", archive), Member: "bwrap"})
	if _, err := Install(ctx, testOptions(home, good)); err != nil {
		t.Fatalf("install after a killed installer: %v", err)
	}
	assertActive(t, home, good)
	assertNoTemp(t, home)
}

// waitForTemp waits until a partial temp file with some bytes appears in dir.
func waitForTemp(t *testing.T, dir string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		matches, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*"))
		for _, match := range matches {
			if info, err := os.Stat(match); err == nil && info.Size() > 0 {
				return match
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no partial temp file appeared")
	return ""
}

// TestConcurrentInstallers races eight installers into one empty home, as goroutines and
// as processes: all succeed, exactly one changes anything, one valid binary is active.
func TestConcurrentInstallers(t *testing.T) {
	t.Parallel()
	bwrap := loadBwrap(t)
	const installers = 8
	archive := buildArchive(t, "tar.gz", entry{name: "bwrap", data: bwrap.data})
	artifact := bwrap.artifact(Source{URL: serveBytes(t, "bwrap.tar.gz", archive), Member: "bwrap"})

	t.Run("goroutines", func(t *testing.T) {
		t.Parallel()
		home := filepath.Join(t.TempDir(), "home")
		results := make([]Result, installers)
		errs := make([]error, installers)
		var wg sync.WaitGroup
		for i := range installers {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				results[i], errs[i] = Install(ctx, testOptions(home, artifact))
			})
		}
		wg.Wait()
		assertOneWinner(t, home, artifact, results, errs)
	})

	t.Run("processes", func(t *testing.T) {
		t.Parallel()
		home := filepath.Join(t.TempDir(), "home")
		commands := make([]*exec.Cmd, installers)
		outputs := make([]*bytes.Buffer, installers)
		for i := range commands {
			commands[i] = helperCommand(t, helperRequest{Home: home, Artifact: artifact, StallLimit: 10 * time.Second, Timeout: time.Minute})
			outputs[i] = &bytes.Buffer{}
			commands[i].Stdout = outputs[i]
			commands[i].Stderr = outputs[i]
			if err := commands[i].Start(); err != nil {
				t.Fatal(err)
			}
		}
		results := make([]Result, installers)
		errs := make([]error, installers)
		for i, cmd := range commands {
			if errs[i] = cmd.Wait(); errs[i] != nil {
				errs[i] = fmt.Errorf("%w: %s", errs[i], outputs[i])
				continue
			}
			errs[i] = json.Unmarshal(outputs[i].Bytes(), &results[i])
		}
		assertOneWinner(t, home, artifact, results, errs)
	})
}

func assertOneWinner(t *testing.T, home string, artifact Artifact, results []Result, errs []error) {
	t.Helper()
	changed := 0
	for i, err := range errs {
		if err != nil {
			t.Errorf("installer %d: %v", i, err)
			continue
		}
		if results[i].Changed {
			changed++
		}
		if results[i].SHA256 != artifact.SHA256 {
			t.Errorf("installer %d reports sha256 %s", i, results[i].SHA256)
		}
	}
	if changed != 1 {
		t.Errorf("%d installers changed the home, want exactly 1", changed)
	}
	assertActive(t, home, artifact)
	assertNoTemp(t, home)
	versions, _ := os.ReadDir(filepath.Join(home, versionsDir))
	if len(versions) != 1 {
		t.Errorf("versions/ holds %d entries, want 1", len(versions))
	}
}
