package selftest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
	"golang.org/x/sys/unix"
)

// killBounds are the sandbox timeouts timeout-kill tries. The first is short, since it is
// most of the doctor's wall time; each counts from the command's release, so it needs only
// the probe's start and its grandchild's. It is the launch check's whole run when the kill
// follows it (a slow host's launch says how slow), and at least 10 ms, which is what it is
// when it runs beside the launch (launch zero; the doctor's default): on this project's
// test host the grandchild's marker was there in 20 of 20 doctors. A longer one is tried
// only when the grandchild had no time to write its marker (a loaded host), since a kill
// before it exists proves nothing; the next is 50 ms, which a host loaded to several times
// its cores meets, so that beside the launch such a host pays one short attempt more
// rather than a quarter of a second.
func killBounds(launch time.Duration) []time.Duration {
	first := min(max(launch, 10*time.Millisecond), time.Second)
	bounds := []time.Duration{first}
	for _, next := range []time.Duration{50 * time.Millisecond, 250 * time.Millisecond, time.Second, 5 * time.Second} {
		if next > first {
			bounds = append(bounds, next)
		}
	}
	return bounds
}

// TimeoutKill is the self-test of its name; see doctor/README.md for why it can fail and pass.
func TimeoutKill(ctx context.Context, env *Env, launched Launched) report.Check {
	fixture := env.Scene
	var check report.Check
	for attempt, bound := range killBounds(launched.Result.Duration) {
		token := fmt.Sprintf("bwrapkit-kill-%s-%d", fixture.token, attempt)
		marker := filepath.Join(fixture.workdir, token)
		res, err := env.Run(ctx, ProbeRun{Name: "spawn", Args: []string{token, marker}, Timeout: bound})
		if err != nil {
			return Failed("the timeout probe did not run", err)
		}
		var spawned probe.SpawnObservation
		_ = json.Unmarshal(res.Stdout, &spawned)
		// The marker on the host, not the probe's word, says the grandchild ran.
		_, markerErr := os.Stat(marker)
		spawned.Ready = markerErr == nil
		if !spawned.Ready && spawned.Error == "" {
			spawned.Error = fmt.Sprintf("no marker within the %v timeout", bound)
		}
		left := survivors(ctx, token)
		check = timeoutKillVerdict(res.Result, spawned, left)
		endSurvivors(left) // the breach is reported; the host need not keep them
		check.Detail += fmt.Sprintf("; timeout %v (attempt %d)", bound, attempt+1)
		if spawned.Ready || ctx.Err() != nil {
			break
		}
	}
	return check
}

// timeoutKillVerdict: the timeout fired (124), and no process carrying the token survived
// on the host, the setsid grandchild included.
func timeoutKillVerdict(result sandbox.Result, spawned probe.SpawnObservation, survivors []string) report.Check {
	detail := fmt.Sprintf("timed out: %v, exit %d, grandchild started: %v", result.TimedOut, result.ExitCode, spawned.Ready)
	switch {
	case len(survivors) > 0:
		return breach("processes survived the timeout: "+strings.Join(survivors, ", "), detail)
	case !result.TimedOut || result.ExitCode != 124:
		return report.Check{Status: report.StatusFail, Summary: fmt.Sprintf("the timeout did not end the sandbox (exit %d)", result.ExitCode), Detail: detail, Remedy: boundaryRemedy}
	case !spawned.Ready:
		return report.Check{Status: report.StatusFail, Summary: "the grandchild never started, so the kill proves nothing: " + OrNothing(spawned.Error), Detail: detail}
	}
	return pass("on timeout every process died, a setsid grandchild included (exit 124)", detail)
}

// survivors lists the host's processes whose command line carries token, waiting briefly
// for the kernel to finish tearing the namespace down.
func survivors(ctx context.Context, token string) []string {
	deadline := time.Now().Add(2 * time.Second)
	for {
		found := processesWith(token)
		if len(found) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return found
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// endSurvivors kills the processes survivors found: each carries this doctor's token, so
// it is one the doctor started.
func endSurvivors(found []string) {
	for _, entry := range found {
		pid, _, _ := strings.Cut(entry, ":")
		if n, err := strconv.Atoi(pid); err == nil && n > 1 {
			syscall.Kill(n, syscall.SIGKILL)
		}
	}
}

// processesWith is every host process whose command line carries token, as "pid: argv".
// It reads /proc with three system calls per process (open, read, close on a buffer of
// its own; os.ReadFile adds an fstat and a second read): the scan is over every process
// on the host, so its cost per process is most of the timeout-kill check's own CPU.
func processesWith(token string) []string {
	proc, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(proc)
	var found []string
	buffer := make([]byte, 64<<10)
	listing := make([]byte, 32<<10)
	var names []string
	for {
		n, err := unix.Getdents(proc, listing)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(listing[:n], -1, names[:0])
		for _, name := range names {
			if name[0] < '1' || name[0] > '9' {
				continue // not a pid
			}
			if cmdline, ok := readCmdline(proc, name, buffer); ok && strings.Contains(string(cmdline), token) {
				found = append(found, name+": "+strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " "))
			}
		}
	}
	return found
}

// readCmdline reads /proc/<pid>/cmdline into buffer: whole when shorter than it (the
// kernel fills a read as far as the command line goes, so a short read is its end); a
// longer one only to the buffer's end, and the token is near its start (argv[0] or [2]).
func readCmdline(proc int, pid string, buffer []byte) ([]byte, bool) {
	fd, err := unix.Openat(proc, pid+"/cmdline", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	total := 0
	for total < len(buffer) {
		n, err := unix.Read(fd, buffer[total:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		short := n < len(buffer)-total
		total += n
		if short {
			break
		}
	}
	return buffer[:total], true
}
