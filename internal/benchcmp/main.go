// Command benchcmp times two commands side by side, interleaved round by round so
// that machine noise falls on both alike, and prints their medians and the ratio.
// Each command is a JSON array of strings, as `bwrapkit argv` prints one. Peers given
// with -also run in the same rounds and are reported against the first command.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// peers are -also's NAME=JSON commands, in the order given.
type peers []peer

type peer struct {
	name string
	argv []string
}

func (p *peers) String() string { return fmt.Sprint(len(*p)) }

func (p *peers) Set(value string) error {
	name, command, ok := strings.Cut(value, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q is not NAME=JSON-ARRAY", value)
	}
	*p = append(*p, peer{name: name, argv: parse(command)})
	return nil
}

// fd3Path is opened on descriptor 3 of every command (-fd3).
var fd3Path string

// parallel is how many copies of a command one round starts at once (-parallel).
var parallel = 1

// cpu measures every run's CPU (-cpu).
var cpu meter

func main() {
	rounds := flag.Int("rounds", 100, "timed runs of each command")
	warmup := flag.Int("warmup", 5, "untimed runs of each command first")
	nameA := flag.String("name-a", "a", "label of the first command")
	nameB := flag.String("name-b", "b", "label of the second command (the unit)")
	commandA := flag.String("a", "", "first command, a JSON array")
	commandB := flag.String("b", "", "second command, a JSON array")
	unit := flag.String("unit", "ratio", "what the ratio is called in the output")
	fd3 := flag.String("fd3", "", "open this file on descriptor 3 of both commands (the seccomp filter `bwrapkit argv --seccomp-file` wrote)")
	cpuChoice := flag.String("cpu", "auto", "how CPU is counted: auto, v1 (cpuacct), v2 (cpu.stat), or rusage (wait4, which misses a sandbox's own processes)")
	flag.IntVar(&parallel, "parallel", 1, "copies of each command started at once per round: CPU is then per copy, and throughput (copies a second) is printed")
	var also peers
	flag.Var(&also, "also", "a peer, NAME=JSON-ARRAY, run in the same rounds and reported against the first command (repeatable)")
	flag.Parse()
	a, b := parse(*commandA), parse(*commandB)
	var err error
	if cpu, err = newMeter(*cpuChoice); err != nil {
		fmt.Fprintf(os.Stderr, "benchcmp: %v\n", err)
		os.Exit(2)
	}
	defer cpu.close()
	fd3Path = *fd3
	for range *warmup {
		run(a)
		run(b)
		for _, p := range also {
			run(p.argv)
		}
	}
	var timesA, timesB, cpuA, cpuB []time.Duration
	timesPeer, cpuPeer := make([][]time.Duration, len(also)), make([][]time.Duration, len(also))
	for range *rounds {
		wall, cpu := run(a)
		timesA, cpuA = append(timesA, wall), append(cpuA, cpu)
		wall, cpu = run(b)
		timesB, cpuB = append(timesB, wall), append(cpuB, cpu)
		for i, p := range also {
			wall, cpu = run(p.argv)
			timesPeer[i], cpuPeer[i] = append(timesPeer[i], wall), append(cpuPeer[i], cpu)
		}
	}
	medianA, medianB := median(timesA), median(timesB)
	fmt.Printf("%-28s min %8.3f ms, median %8.3f ms over %d runs; CPU median %7.3f ms\n", *nameA, ms(slices.Min(timesA)), ms(medianA), *rounds, ms(median(cpuA)))
	fmt.Printf("%-28s min %8.3f ms, median %8.3f ms over %d runs; CPU median %7.3f ms\n", *nameB, ms(slices.Min(timesB)), ms(medianB), *rounds, ms(median(cpuB)))
	fmt.Printf("%-28s %.2f (wall, medians); CPU %.2f, counted by %s\n", *unit, float64(medianA)/float64(medianB), float64(median(cpuA))/float64(median(cpuB)), cpu.name())
	if parallel > 1 {
		throughput := func(wall time.Duration) float64 { return float64(parallel) / wall.Seconds() }
		fmt.Printf("%-28s %d at once: %.0f and %.0f runs/s (median rounds), %.2f of %s's; CPU above is per run\n", "throughput", parallel,
			throughput(medianA), throughput(medianB), throughput(medianA)/throughput(medianB), *nameB)
	}
	for i, p := range also {
		wall, cpuTime := median(timesPeer[i]), median(cpuPeer[i])
		fmt.Printf("%-28s min %8.3f ms, median %8.3f ms; CPU median %7.3f ms; %.2fx %s's wall, %.2fx its CPU\n",
			p.name, ms(slices.Min(timesPeer[i])), ms(wall), ms(cpuTime), float64(wall)/float64(medianA), *nameA, float64(cpuTime)/float64(median(cpuA)))
	}
}

func parse(text string) []string {
	var argv []string
	if err := json.Unmarshal([]byte(text), &argv); err != nil || len(argv) == 0 {
		fmt.Fprintf(os.Stderr, "benchcmp: %q is not a JSON array of strings\n", text)
		os.Exit(2)
	}
	return argv
}

// run times one round of argv (parallel copies at once) and returns its wall time and
// the CPU per copy that their whole process trees used (see cpu.go); a failing command
// makes the comparison meaningless, and ends this.
func run(argv []string) (wall, cpuTime time.Duration) {
	cmds := make([]*exec.Cmd, parallel)
	for i := range cmds {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stderr = os.Stderr
		if fd3Path != "" {
			// Opened afresh for each run: bwrap reads the filter to the end, and a shared
			// descriptor would leave the next run an empty one.
			file, err := os.Open(fd3Path)
			if err != nil {
				fail(2, err)
			}
			defer file.Close()
			cmd.ExtraFiles = []*os.File{file}
		}
		cmds[i] = cmd
	}
	wall, cpuTime, err := cpu.run(cmds)
	if err != nil {
		fail(1, fmt.Errorf("%v: %w", argv, err))
	}
	return wall, cpuTime / time.Duration(parallel)
}

// fail ends the comparison, removing the cgroups it made first.
func fail(status int, err error) {
	fmt.Fprintf(os.Stderr, "benchcmp: %v\n", err)
	cpu.close()
	os.Exit(status)
}

func median(times []time.Duration) time.Duration {
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
