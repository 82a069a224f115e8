package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/install"
	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// processBound is how long a built bwrapkit may take before the test kills it and calls
// it hung: generous, since a loaded CI host is slow, and never a timing assertion.
const processBound = 60 * time.Second

// builtInstall is the built binary running `install`, its stderr read line by line so a
// test can act at a given phase.
type builtInstall struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr strings.Builder
	done   chan struct{}
}

func startInstall(t *testing.T, home string, environ []string, args ...string) *builtInstall {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), processBound)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, builtBinary, append([]string{"install", "--home", home}, args...)...)
	if environ == nil {
		environ = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	}
	cmd.Env = environ
	cmd.Dir = t.TempDir()
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	run := &builtInstall{cmd: cmd, lines: make(chan string, 100), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(run.done)
		defer close(run.lines)
		scanner := bufio.NewScanner(pipe)
		for scanner.Scan() {
			run.stderr.WriteString(scanner.Text() + "\n")
			run.lines <- scanner.Text()
		}
	}()
	return run
}

// waitFor reads stderr until a line contains text.
func (r *builtInstall) waitFor(t *testing.T, text string) {
	t.Helper()
	for line := range r.lines {
		if strings.Contains(line, text) {
			return
		}
	}
	t.Fatalf("install ended without saying %q", text)
}

// wait returns the exit status; a process the bound had to kill is a hang.
func (r *builtInstall) wait(t *testing.T) (int, string) {
	t.Helper()
	for range r.lines {
	}
	<-r.done
	err := r.cmd.Wait()
	if status, ok := r.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && status.Signaled() {
		if status.Signal() == syscall.SIGKILL {
			t.Fatalf("install hung: killed after %s; stderr:\n%s", processBound, r.stderr.String())
		}
		t.Fatalf("install died of %v instead of handling it; stderr:\n%s", status.Signal(), r.stderr.String())
	}
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return r.cmd.ProcessState.ExitCode(), r.stderr.String()
}

// assertNothingInstalled: no binary, temp or spool file anywhere under home, and the lock
// is free (a second locker gets it at once).
func assertNothingInstalled(t *testing.T, home string) {
	t.Helper()
	filepath.Walk(home, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && path != filepath.Join(home, ".lock") {
			t.Errorf("left behind: %s (%v)", path, info.Mode())
		}
		return nil
	})
	lock, err := os.OpenFile(filepath.Join(home, ".lock"), os.O_RDWR, 0)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Errorf("the home's lock is still held: %v", err)
	}
}

// markerManager is a PATH holding a fake apt-get that only leaves a mark: if a refused
// input ever fell through to the package method, the mark says so (and no real package
// manager runs as root).
func markerManager(t *testing.T) (environ []string, ran string) {
	dir := t.TempDir()
	ran = filepath.Join(dir, "apt-get.ran")
	script := "#!/bin/sh\ntouch " + ran + "\nexit 1\n"
	if err := livetest.WriteProgram(filepath.Join(dir, "apt-get"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"PATH=" + dir + ":/usr/bin:/bin", "HOME=" + t.TempDir()}, ran
}

// TestInstallRefusesPlantedLocalFiles: a FIFO, a symlink or a device where install reads
// a host file (the manifest, a file in a plain-path mirror, a file:// source) ends the
// install at once with exit 2 and one line naming the path; nothing is written, the lock
// is free, and no other method is tried.
func TestInstallRefusesPlantedLocalFiles(t *testing.T) {
	artifact, err := install.Default().Artifact(runtime.GOARCH)
	if err != nil {
		t.Skipf("the default manifest has no %s artifact", runtime.GOARCH)
	}
	plant := func(t *testing.T, kind, path string) {
		t.Helper()
		var err error
		switch kind {
		case "fifo":
			err = syscall.Mkfifo(path, 0o644)
		case "symlink":
			err = os.Symlink("/usr/bin/bwrap", path)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, kind := range []string{"fifo", "symlink"} {
		t.Run("manifest "+kind, func(t *testing.T) {
			manifest := filepath.Join(t.TempDir(), "manifest.json")
			plant(t, kind, manifest)
			home := filepath.Join(t.TempDir(), "home")
			environ, ran := markerManager(t)
			status, stderr := startInstall(t, home, environ, "--manifest", manifest).wait(t)
			wantRefused(t, status, stderr, manifest, kind)
			if _, err := os.Stat(home); err == nil {
				t.Errorf("the home was created for a refused manifest")
			}
			if _, err := os.Stat(ran); err == nil {
				t.Errorf("the package manager ran after a refused manifest")
			}
		})
		t.Run("mirror file "+kind, func(t *testing.T) {
			mirror := t.TempDir()
			mirrored, err := artifact.WithMirror(mirror)
			if err != nil {
				t.Fatal(err)
			}
			for _, source := range mirrored.Sources {
				plant(t, kind, source.URL)
			}
			home := filepath.Join(t.TempDir(), "home")
			environ, ran := markerManager(t)
			// auto, the default: a refused file must not count as an unreachable source.
			status, stderr := startInstall(t, home, environ, "--mirror", mirror).wait(t)
			wantRefused(t, status, stderr, mirrored.Sources[0].URL, kind)
			assertNothingInstalled(t, home)
			if _, err := os.Stat(ran); err == nil {
				t.Errorf("the package manager ran after a refused mirror file")
			}
		})
	}
	t.Run("file URL source is a FIFO", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "bwrap")
		plant(t, "fifo", fifo)
		manifest := writeManifest(t, fmt.Sprintf(`{"schema":"bwrapkit.manifest/v1","artifacts":[{"version":"0.12.0","arch":%q,
			"sha256":"253c70372599ac19851ffcc923acca01fe1bcf6b4b03fce789fd9fb3e2ff6270","size":945328,
			"sources":[{"url":"file://%s","member":""}]}]}`, runtime.GOARCH, fifo))
		home := filepath.Join(t.TempDir(), "home")
		status, stderr := startInstall(t, home, nil, "--manifest", manifest, "--method", "pinned").wait(t)
		wantRefused(t, status, stderr, fifo, "fifo")
		assertNothingInstalled(t, home)
	})
}

func wantRefused(t *testing.T, status int, stderr, path, kind string) {
	t.Helper()
	what := map[string]string{"fifo": "is a FIFO", "symlink": "is a symbolic link"}[kind]
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if status != exitUsage || !strings.Contains(last, path+" "+what) || !strings.HasPrefix(last, "bwrapkit: ") {
		t.Errorf("status %d, stderr:\n%s\nwant exit 2 and a line saying %s %s", status, stderr, path, what)
	}
}

// stallingServer answers with headers and part of a body, then sends nothing until the
// test ends. sent is closed once the partial body is out.
func stallingServer(t *testing.T) (url string, sent chan struct{}) {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	sent = make(chan struct{})
	t.Cleanup(func() { close(release); listener.Close() })
	go func() {
		conn, err := listener.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		// The request is read before the answer: Go's client drops a response that comes
		// before its request was written ("unsolicited response on idle channel").
		reader := bufio.NewReader(conn)
		if _, err := http.ReadRequest(reader); err != nil {
			return
		}
		go io.Copy(io.Discard, reader)
		fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: 945328\r\n\r\n")
		conn.Write(make([]byte, 64<<10))
		close(sent)
		<-release
	}()
	return "http://" + listener.Addr().String() + "/bwrap", sent
}

func stallingManifest(t *testing.T, url string) string {
	return writeManifest(t, fmt.Sprintf(`{"schema":"bwrapkit.manifest/v1","artifacts":[{"version":"0.12.0","arch":%q,
		"sha256":"253c70372599ac19851ffcc923acca01fe1bcf6b4b03fce789fd9fb3e2ff6270","size":945328,
		"sources":[{"url":%q,"member":""}]}]}`, runtime.GOARCH, url))
}

// TestInstallSIGTERMDuringStalledDownload: the server stops sending mid-body (the stall
// limit is 30s, --timeout 5m); SIGTERM ends the install at once with 143, the partial
// temp file is gone and the lock is free.
func TestInstallSIGTERMDuringStalledDownload(t *testing.T) {
	url, sent := stallingServer(t)
	home := filepath.Join(t.TempDir(), "home")
	run := startInstall(t, home, nil, "--manifest", stallingManifest(t, url), "--method", "pinned")
	run.waitFor(t, "downloading "+url)
	<-sent
	// Signalled only once the partial file exists: the test is about removing it.
	waitForPartial(t, home)
	if err := run.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	status, stderr := run.wait(t)
	if status != 128+int(syscall.SIGTERM) || !strings.Contains(stderr, "install stopped (interrupted by terminated)") {
		t.Errorf("status %d, stderr:\n%s", status, stderr)
	}
	assertNothingInstalled(t, home)
}

// waitForPartial waits, within processBound, until a download's temp file in
// <home>/versions holds bytes.
func waitForPartial(t *testing.T, home string) {
	t.Helper()
	deadline := time.Now().Add(processBound)
	for time.Now().Before(deadline) {
		partial, _ := filepath.Glob(filepath.Join(home, "versions", ".tmp-*"))
		for _, name := range partial {
			if info, err := os.Stat(name); err == nil && info.Size() > 0 {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no partial download appeared in %s/versions", home)
}

// holdLock takes the home's lock as another installer would, until the test ends.
func holdLock(t *testing.T, home string) {
	t.Helper()
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(home, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
}

// TestInstallLockWaitEnds: waiting for another installer's lock ends at SIGTERM (143) and
// at --timeout (1), saying which, and writes nothing.
func TestInstallLockWaitEnds(t *testing.T) {
	manifest, _ := pinnedManifest(t, runtime.GOARCH)
	t.Run("SIGTERM", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "home")
		holdLock(t, home)
		run := startInstall(t, home, nil, "--manifest", manifest, "--method", "pinned")
		run.waitFor(t, "waiting for another installer to release "+filepath.Join(home, ".lock"))
		if err := run.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		status, stderr := run.wait(t)
		if status != 128+int(syscall.SIGTERM) || !strings.Contains(stderr, "install stopped (interrupted by terminated)") {
			t.Errorf("status %d, stderr:\n%s", status, stderr)
		}
		assertNothingInstalledButLock(t, home)
	})
	t.Run("timeout", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "home")
		holdLock(t, home)
		status, stderr := startInstall(t, home, nil, "--manifest", manifest, "--method", "pinned", "--timeout", "1s").wait(t)
		if status != exitFailure || !strings.Contains(stderr, "--timeout 1s expired: another installer holds") {
			t.Errorf("status %d, stderr:\n%s", status, stderr)
		}
		assertNothingInstalledButLock(t, home)
	})
}

// assertNothingInstalledButLock is assertNothingInstalled while the test itself still
// holds the lock.
func assertNothingInstalledButLock(t *testing.T, home string) {
	t.Helper()
	filepath.Walk(home, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && path != filepath.Join(home, ".lock") {
			t.Errorf("left behind: %s (%v)", path, info.Mode())
		}
		return nil
	})
}
