package cgroup

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// liveHost is this host's cgroup layout, or a skip where the test's user cannot have one
// (that is the host's state, and the doctor's limits check reports it).
func liveHost(t *testing.T) Host {
	t.Helper()
	host := Detect()
	switch {
	case host.Mode == None && os.Geteuid() == 0:
		livetest.Skip(t, "no cgroup for root on this host: "+host.Why) // a failure where live tests are required
	case host.Mode == None:
		t.Skipf("no cgroup for uid %d here: %s", os.Geteuid(), host.Why)
	}
	return host
}

func token(t *testing.T) string {
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		t.Fatal(err)
	}
	return "test-" + hex.EncodeToString(raw[:])
}

// startIn starts argv in group as the runner does: cloned into the v2 cgroup, forked
// from a locked thread that is in the v1 ones for the moment of the fork.
func startIn(t *testing.T, group *Group, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	group.Attach(cmd.SysProcAttr)
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		leave, err := group.EnterThread()
		if err != nil {
			started <- err
			return
		}
		err = cmd.Start()
		if leaveErr := leave(); err == nil {
			err = leaveErr
		}
		started <- err
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	return cmd
}

// TestLiveGroupHoldsAndEnds: a child is in every cgroup of the run from its start, the
// bwrapkit thread that forked it is not, End kills a tree that left its session, and
// every directory is gone afterwards.
func TestLiveGroupHoldsAndEnds(t *testing.T) {
	host := liveHost(t)
	group, err := host.Create(token(t), Bounds{Memory: 64 << 20, Pids: 32})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = group.End(5 * time.Second) })
	// The child reads its own cgroups as its first act: what the fork gave it.
	first := t.TempDir() + "/first"
	cmd := startIn(t, group, "/bin/sh", "-c", "cat /proc/self/cgroup > "+first+"; setsid sleep 600 & exec sleep 600")
	self, _ := os.ReadFile("/proc/self/cgroup")
	for _, dir := range group.Paths() {
		if strings.Contains(string(self), path.Base(dir)) {
			t.Errorf("the test process is in the run's cgroup %s:\n%s", dir, self)
		}
		procs, err := os.ReadFile(path.Join(dir, "cgroup.procs"))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(strings.Fields(string(procs)), strconv.Itoa(cmd.Process.Pid)) {
			t.Errorf("the child %d is not in %s: %q", cmd.Process.Pid, dir, procs)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	var seen []byte
	for len(seen) == 0 || !strings.HasSuffix(string(seen), "\n") {
		if time.Now().After(deadline) {
			t.Fatal("the child never wrote its cgroups")
		}
		time.Sleep(10 * time.Millisecond)
		seen, _ = os.ReadFile(first)
	}
	for _, dir := range group.Paths() {
		if !strings.Contains(string(seen), path.Base(dir)) {
			t.Errorf("the child's first look at its cgroups lacks %s:\n%s", dir, seen)
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if err := group.End(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the child outlived End")
	}
	for _, dir := range group.Paths() {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", dir, err)
		}
	}
}

// TestLiveSweepRemovesAbandoned: an empty run cgroup older than abandonedAge (what a
// runner that died without a keeper leaves) is removed by the next run's sweep; a fresh
// empty one (a run between its mkdir and bwrap's clone) and a populated one are kept.
func TestLiveSweepRemovesAbandoned(t *testing.T) {
	host := liveHost(t)
	old, err := host.Create(token(t), Bounds{Memory: Unlimited, Pids: Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.End(5 * time.Second) })
	fresh, err := host.Create(token(t), Bounds{Memory: Unlimited, Pids: Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fresh.End(5 * time.Second) })
	busy, err := host.Create(token(t), Bounds{Memory: Unlimited, Pids: Unlimited})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = busy.End(5 * time.Second) })
	sleeper := startIn(t, busy, "/bin/sleep", "60")
	go func() { _ = sleeper.Wait() }()
	// Sweeping as if two minutes had passed since old and busy were made, but fresh is
	// judged by its real age: made now.
	later := time.Now().Add(2 * abandonedAge)
	for _, dir := range fresh.Paths() {
		if err := os.Chtimes(dir, later, later); err != nil {
			t.Skipf("cannot set a cgroup directory's time here: %v", err)
		}
	}
	for _, parent := range []string{host.Unified, host.Memory, host.Pids} {
		if parent != "" {
			sweep(parent, later.Add(time.Second))
		}
	}
	for _, dir := range old.Paths() {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the abandoned %s is still there (%v)", dir, err)
		}
	}
	for _, dir := range append(fresh.Paths(), busy.Paths()...) {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed: %v", dir, err)
		}
	}
}
