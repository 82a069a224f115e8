package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/sandbox/limits"
	"golang.org/x/sys/unix"
)

// TestHoldIsTakenOnceByItsRun: a Hold goes to the run of the keeper and bounds it was
// made for, once, while fresh; a run of another keeper or other bounds makes its own, as
// does the run given a stale hold or one not made by Prepare (whose Release does
// nothing, and does not hang); and Release after the take leaves it to the run that
// took it.
func TestHoldIsTakenOnceByItsRun(t *testing.T) {
	bounds, err := limits.Parse([]string{"pids=100"}, limits.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	close(ready)
	hold := &Hold{keeper: "/k", limits: bounds, made: time.Now(), ready: ready}
	stale := &Hold{keeper: "/k", limits: bounds, made: time.Now().Add(-holdFresh), ready: ready}
	var none *Hold
	zero := &Hold{}
	zero.Release()
	switch {
	case none.take("/k", bounds):
		t.Error("a nil hold was taken")
	case zero.take("", limits.Defaults()):
		t.Error("a Hold not made by Prepare was taken")
	case stale.take("/k", bounds):
		t.Error("a stale hold was taken")
	case hold.take("/other", bounds):
		t.Error("taken by the run of another keeper")
	case hold.take("/k", limits.Defaults()):
		t.Error("taken by a run of other bounds")
	case !hold.take("/k", bounds):
		t.Error("not taken by its own run")
	case hold.take("/k", bounds):
		t.Error("taken twice")
	}
	hold.Release() // taken: the run ends it, not this
	ended := false
	hold.once.Do(func() { ended = true })
	if !ended {
		t.Error("Release ended a hold a run had taken")
	}
}

// TestLivePreparedHoldHoldsTheRun: a Hold prepared ahead holds the run it is passed to:
// the sandbox's processes are in its cgroup (where the host gives one) and the run is
// kept; the run removes that cgroup at its end. A hold made for other bounds is left
// alone by the run, and its Release removes its cgroup.
func TestLivePreparedHoldHoldsTheRun(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		policy, err := NewPolicy(Request{Workdir: livetest.TempDir(t)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		keeper := testExecutable(t)
		hold := Prepare(keeper, policy.Limits)
		defer hold.Release()
		other, err := limits.Parse([]string{"nofile=321"}, limits.Defaults()) // no cgroup bound: nothing refused where the host gives none
		if err != nil {
			t.Fatal(err)
		}
		stranger := Prepare(keeper, other)
		defer stranger.Release()
		_, group, _, holdErr := hold.wait()
		_, strangerGroup, _, strangerErr := stranger.wait()
		if holdErr != nil || strangerErr != nil {
			t.Fatalf("preparing: %v; %v", holdErr, strangerErr)
		}
		seen := make(chan string, 1)
		if group != nil {
			procs := filepath.Join(group.Paths()[0], "cgroup.procs")
			go func() {
				deadline := time.Now().Add(5 * time.Second)
				for time.Now().Before(deadline) {
					if data, _ := os.ReadFile(procs); len(strings.TrimSpace(string(data))) > 0 {
						seen <- strings.TrimSpace(string(data))
						return
					}
					time.Sleep(time.Millisecond)
				}
				seen <- ""
			}()
		}
		result, err := Run(context.Background(), policy, []string{"/bin/sleep", "0.3"}, Options{Bwrap: bwrap, Keeper: keeper, Hold: hold})
		if err != nil || result.ExitCode != 0 || result.Lifetime != LifetimeKeeper {
			t.Fatalf("the run: %+v %v, want a kept run that exits 0", result, err)
		}
		if group == nil {
			t.Logf("no cgroup on this host for this user (%s): the keeper alone was prepared", result.Cgroup.Why)
			return
		}
		if procs := <-seen; procs == "" {
			t.Errorf("no process of the run appeared in the prepared cgroup %s", group.Paths()[0])
		}
		for _, dir := range group.Paths() {
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("the run left its prepared cgroup %s", dir)
			}
		}
		for _, dir := range strangerGroup.Paths() {
			if _, err := os.Stat(dir); err != nil {
				t.Errorf("the run took a hold made for other bounds: its cgroup %s is gone (%v)", dir, err)
			}
		}
		stranger.Release()
		for _, dir := range strangerGroup.Paths() {
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("Release left the untaken hold's cgroup %s", dir)
			}
		}
	})
}

// TestPrepareKeepsInheritedDescriptorsFromTheKeeper: Prepare marks every descriptor of
// the process above 2 close-on-exec before it starts the keeper, as Run does before
// bwrap: one the caller left inheritable (as one inherited from a parent is) must not
// reach a program started on the host.
func TestPrepareKeepsInheritedDescriptorsFromTheKeeper(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "open-secret")
	if err := os.WriteFile(secret, []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(secret, syscall.O_RDONLY, 0) // deliberately without O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	hold := Prepare("", limits.Defaults())
	defer hold.Release()
	if _, _, _, err := hold.wait(); err != nil {
		t.Fatal(err)
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("descriptor %d after Prepare: flags %#x (%v), want close-on-exec", fd, flags, err)
	}
}

// TestLiveRunEndsWhenItsKeeperDies: a keeper killed while its run goes on (the OOM killer,
// a `pkill -9 bwrapkit` that matched it too) leaves nothing to end the sandbox should
// bwrapkit die next: the run is ended at once and refused (hardening), not left unkept.
func TestLiveRunEndsWhenItsKeeperDies(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		workdir := livetest.TempDir(t)
		// Direct: the command's marker shows on the host as it is written.
		policy, err := NewPolicy(Request{Workdir: workdir, WorkdirMode: string(WorkdirDirect)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		hold := Prepare(testExecutable(t), policy.Limits)
		defer hold.Release()
		kept, _, _, err := hold.wait()
		if err != nil || kept == nil {
			t.Fatalf("preparing: %v", err)
		}
		marker := filepath.Join(workdir, "started")
		type outcome struct {
			result Result
			err    error
		}
		done := make(chan outcome, 1)
		go func() {
			result, err := Run(context.Background(), policy, []string{"/bin/sh", "-c", "touch " + marker + " && exec sleep 30"}, Options{Bwrap: bwrap, Keeper: testExecutable(t), Hold: hold})
			done <- outcome{result, err}
		}()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Lstat(marker); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the command never started")
			}
		}
		// A `pkill -9 bwrapkit` must not reach the keeper: its name does not say bwrapkit.
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", kept.Pid())); err != nil || strings.Contains(string(comm), "bwrapkit") {
			t.Errorf("the keeper's name is %q (%v): a pkill of bwrapkit would end it too", comm, err)
		}
		if err := syscall.Kill(kept.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-done:
			var unavailable *UnavailableError
			if !errors.As(got.err, &unavailable) || unavailable.Reason != ReasonHardening || !strings.Contains(got.err.Error(), "keeper exited") {
				t.Errorf("after the keeper died: %+v %v, want a hardening refusal naming the keeper", got.result, got.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the run went on for 10 s without its keeper")
		}
	})
}

// TestStaleHoldIsReleasedByTheRunThatMakesItsOwn: a hold too old for any run to take is
// let go as soon as a run makes its own, not after that whole run.
func TestStaleHoldIsReleasedByTheRunThatMakesItsOwn(t *testing.T) {
	forEachBwrap(t, func(t *testing.T, bwrap string) {
		policy, err := NewPolicy(Request{Workdir: livetest.TempDir(t)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		keeper := testExecutable(t)
		stale := Prepare(keeper, policy.Limits)
		defer stale.Release()
		kept, _, _, err := stale.wait()
		if err != nil || kept == nil {
			t.Fatalf("preparing: %v", err)
		}
		stale.made = stale.made.Add(-holdFresh)
		gone := kept.Exited()
		if gone == nil {
			livetest.Skip(t, "no pidfd to watch the keeper by")
		}
		released := make(chan bool, 1)
		go func() {
			select {
			case <-gone:
				released <- true
			case <-time.After(5 * time.Second):
				released <- false
			}
		}()
		result, err := Run(context.Background(), policy, []string{"/bin/sleep", "1"}, Options{Bwrap: bwrap, Keeper: keeper, Hold: stale})
		if err != nil || result.ExitCode != 0 {
			t.Fatalf("the run: %+v %v", result, err)
		}
		if result.Duration < time.Second {
			t.Fatalf("the run took %v, less than its command", result.Duration)
		}
		select {
		case ok := <-released:
			if !ok {
				t.Error("the stale hold's keeper outlived its release bound")
			}
		default:
			t.Error("the stale hold's keeper was still there when the run ended: not released at the run's start")
		}
	})
}
