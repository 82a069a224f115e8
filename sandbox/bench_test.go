package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// rawBwrap is the comparison every benchmark here makes: a sealed policy for workdir and a
// launch of bwrap exec'd directly with the argv Argv gives for /bin/true, reading its
// filter on descriptor 3 as a caller of Argv must give it.
func rawBwrap(b *testing.B, bwrap, workdir string) (Policy, func() error) {
	b.Helper()
	return rawBwrapFor(b, bwrap, Request{Workdir: workdir})
}

// rawBwrapFor is rawBwrap for any request.
func rawBwrapFor(b *testing.B, bwrap string, request Request) (Policy, func() error) {
	b.Helper()
	policy, err := NewPolicy(request, nil)
	if err != nil {
		b.Fatal(err)
	}
	if policy.Features, err = Probe(context.Background(), bwrap); err != nil {
		b.Fatal(err)
	}
	argv, err := Argv(bwrap, policy, []string{"/bin/true"})
	if err != nil {
		b.Fatal(err)
	}
	program, err := SeccompProgram()
	if err != nil {
		b.Fatal(err)
	}
	return policy, func() error {
		filterRead, filterWrite, err := os.Pipe()
		if err != nil {
			return err
		}
		filterWrite.Write(program)
		filterWrite.Close()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.ExtraFiles = []*os.File{filterRead}
		err = cmd.Run()
		filterRead.Close()
		return err
	}
}

// BenchmarkRun is the Go API's whole cost (launch proof, status fd, stderr tail, wait)
// against bwrap exec'd directly with the same argv, interleaved in one loop. The
// reported ratio is what the runner itself adds, without a CLI's process start-up.
func BenchmarkRun(b *testing.B) {
	bwrap := livetest.SystemBwrap(b)
	policy, raw := rawBwrap(b, bwrap, b.TempDir())
	var runTime, rawTime time.Duration
	for b.Loop() {
		began := time.Now()
		if err := raw(); err != nil {
			b.Fatal(err)
		}
		rawTime += time.Since(began)
		began = time.Now()
		result, err := Run(context.Background(), policy, []string{"/bin/true"}, Options{Bwrap: bwrap})
		if err != nil || result.ExitCode != 0 {
			b.Fatalf("%+v %v", result, err)
		}
		runTime += time.Since(began)
	}
	b.ReportMetric(float64(runTime)/float64(rawTime), "ratio-vs-bwrap")
	b.ReportMetric(float64(runTime.Microseconds())/float64(b.N)/1000, "run-ms")
	b.ReportMetric(float64(rawTime.Microseconds())/float64(b.N)/1000, "bwrap-ms")
}

// BenchmarkRunManyPaths is how the runner's cost grows with the number of --ro paths
// against bwrap's own growth (bwrap itself is about quadratic in its binds): the Go API
// and raw bwrap, interleaved, at 10 and at 500 read-only paths (directories of a scratch
// tree). growth-ratio is (run at 500 - run at 10) / (bwrap at 500 - bwrap at 10); the
// goal is at most 1.1: the runner's resolution and verification are linear and small.
func BenchmarkRunManyPaths(b *testing.B) {
	bwrap := livetest.SystemBwrap(b)
	tree := livetest.TempDir(b)
	var paths []string
	for i := range 500 {
		dir := filepath.Join(tree, "ro", strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, dir)
	}
	type side struct {
		policy   Policy
		raw      func() error
		run, bwr time.Duration
	}
	sides := map[int]*side{}
	for _, n := range []int{10, 500} {
		policy, raw := rawBwrapFor(b, bwrap, Request{Workdir: livetest.TempDir(b), ReadOnly: paths[:n]})
		sides[n] = &side{policy: policy, raw: raw}
	}
	for b.Loop() {
		for _, n := range []int{10, 500} {
			s := sides[n]
			began := time.Now()
			if err := s.raw(); err != nil {
				b.Fatal(err)
			}
			s.bwr += time.Since(began)
			began = time.Now()
			result, err := Run(context.Background(), s.policy, []string{"/bin/true"}, Options{Bwrap: bwrap})
			if err != nil || result.ExitCode != 0 {
				b.Fatalf("%d paths: %+v %v", n, result, err)
			}
			s.run += time.Since(began)
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) / 1000 }
	low, high := sides[10], sides[500]
	b.ReportMetric(per(low.run), "run10-ms")
	b.ReportMetric(per(low.bwr), "bwrap10-ms")
	b.ReportMetric(per(high.run), "run500-ms")
	b.ReportMetric(per(high.bwr), "bwrap500-ms")
	b.ReportMetric((per(high.run)-per(low.run))/(per(high.bwr)-per(low.bwr)), "growth-ratio")
}

// BenchmarkRunTransactional is `run -- /bin/true` in the transactional mode against the
// direct mode, interleaved in one loop (the order alternating), on the pinned 0.12.0
// (Debian's bwrap has no overlay): what the layer, its gate check, the empty layer's
// walk and its removal add, and the kernel's teardown of the overlay. That teardown
// syncs the upper layer's file system (bwrap mounts overlayfs without "volatile"), so
// the figure grows with what other processes left unwritten on that disk. The ratio
// is of medians, as a shared machine's stalls land on either mode at random.
func BenchmarkRunTransactional(b *testing.B) {
	bwrap := filepath.Join(livetest.CachedBwraps(), "bwrap-0.12.0")
	if _, err := os.Stat(bwrap); err != nil {
		livetest.Skip(b, "no "+bwrap)
	}
	workdir := livetest.TempDir(b)
	policies := map[WorkdirMode]Policy{}
	for _, mode := range []WorkdirMode{WorkdirDirect, WorkdirTransactional} {
		policy, err := NewPolicy(Request{Workdir: workdir, WorkdirMode: string(mode)}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if policy.Features, err = Probe(context.Background(), bwrap); err != nil {
			b.Fatal(err)
		}
		policies[mode] = policy
	}
	times := map[WorkdirMode][]time.Duration{}
	order := []WorkdirMode{WorkdirDirect, WorkdirTransactional}
	for b.Loop() {
		for _, mode := range order {
			began := time.Now()
			result, err := Run(context.Background(), policies[mode], []string{"/bin/true"}, Options{Bwrap: bwrap})
			if err != nil || result.ExitCode != 0 || result.WorkdirMode != mode {
				b.Fatalf("%s: %+v %v", mode, result, err)
			}
			times[mode] = append(times[mode], time.Since(began))
		}
		order[0], order[1] = order[1], order[0]
	}
	transactional, direct := medianOf(times[WorkdirTransactional]), medianOf(times[WorkdirDirect])
	b.ReportMetric(float64(transactional)/float64(direct), "ratio-vs-direct")
	b.ReportMetric(float64(transactional.Microseconds())/1000, "transactional-ms")
	b.ReportMetric(float64(direct.Microseconds())/1000, "direct-ms")
}

func medianOf(times []time.Duration) time.Duration {
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

// BenchmarkNewPolicyManyPaths is NewPolicy's own cost for 500 --ro directories under one
// parent, four levels down: what `bwrapkit run` and `argv` pay per command before any
// launch (the Go API's BenchmarkRunManyPaths builds its policy once).
func BenchmarkNewPolicyManyPaths(b *testing.B) {
	tree := filepath.Join(livetest.TempDir(b), "a", "b", "c")
	var paths []string
	for i := range 500 {
		dir := filepath.Join(tree, strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, dir)
	}
	workdir := b.TempDir()
	for b.Loop() {
		if _, err := NewPolicy(Request{Workdir: workdir, ReadOnly: paths, WorkdirMode: string(WorkdirDirect)}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewPolicyLargeRepository is a policy for a repository of 80,000 files (an
// 8 MB index, the size of a large monorepo's), with the workdir at its top (the index
// read for its submodules and the landing's guards) and in a subdirectory (and for the
// enclosing repository). The index used to be read and copied for each check that
// needs it: 12.3 and 20.6 ms on this project's test host, now 1.7 and 2.8 (mapped, once).
func BenchmarkNewPolicyLargeRepository(b *testing.B) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		b.Skip("no git")
	}
	repo := livetest.TempDir(b)
	var list strings.Builder
	for dir := range 400 {
		for file := range 200 {
			fmt.Fprintf(&list, "100644 %040x\tsrc/d%03d/file_with_a_longish_name_%03d.c\n", dir*200+file+1, dir, file)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"update-index", "--index-info"}} {
		cmd := exec.Command(gitPath, append([]string{"-C", repo}, args...)...)
		cmd.Env = []string{"HOME=" + repo, "GIT_CONFIG_NOSYSTEM=1"}
		cmd.Stdin = strings.NewReader(list.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	subdir := filepath.Join(repo, "src", "d001")
	if err := os.MkdirAll(subdir, 0o755); err != nil {
		b.Fatal(err)
	}
	for name, workdir := range map[string]string{"top": repo, "subdirectory": subdir} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := NewPolicy(Request{Workdir: workdir, WorkdirMode: string(WorkdirTransactional)}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
