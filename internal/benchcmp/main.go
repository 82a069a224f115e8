// Command benchcmp times two commands side by side, interleaved round by round so
// that machine noise falls on both alike, and prints their medians and the ratio.
// Each command is a JSON array of strings, as `bwrapkit argv` prints one.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"
)

// fd3Path is opened on descriptor 3 of every command (-fd3).
var fd3Path string

func main() {
	rounds := flag.Int("rounds", 100, "timed runs of each command")
	warmup := flag.Int("warmup", 5, "untimed runs of each command first")
	nameA := flag.String("name-a", "a", "label of the first command")
	nameB := flag.String("name-b", "b", "label of the second command (the unit)")
	commandA := flag.String("a", "", "first command, a JSON array")
	commandB := flag.String("b", "", "second command, a JSON array")
	unit := flag.String("unit", "ratio", "what the ratio is called in the output")
	fd3 := flag.String("fd3", "", "open this file on descriptor 3 of both commands (the seccomp filter `bwrapkit argv --seccomp-file` wrote)")
	flag.Parse()

	a, b := parse(*commandA), parse(*commandB)
	fd3Path = *fd3
	for range *warmup {
		run(a)
		run(b)
	}
	var timesA, timesB, cpuA, cpuB []time.Duration
	for range *rounds {
		wall, cpu := run(a)
		timesA, cpuA = append(timesA, wall), append(cpuA, cpu)
		wall, cpu = run(b)
		timesB, cpuB = append(timesB, wall), append(cpuB, cpu)
	}
	medianA, medianB := median(timesA), median(timesB)
	fmt.Printf("%-28s median %9.3f ms over %d runs, CPU %7.3f ms\n", *nameA, ms(medianA), *rounds, ms(median(cpuA)))
	fmt.Printf("%-28s median %9.3f ms over %d runs, CPU %7.3f ms\n", *nameB, ms(medianB), *rounds, ms(median(cpuB)))
	fmt.Printf("%-28s %.2f\n", *unit, float64(medianA)/float64(medianB))
}

func parse(text string) []string {
	var argv []string
	if err := json.Unmarshal([]byte(text), &argv); err != nil || len(argv) == 0 {
		fmt.Fprintf(os.Stderr, "benchcmp: %q is not a JSON array of strings\n", text)
		os.Exit(2)
	}
	return argv
}

// run times one execution and returns its wall time and its CPU time (user and system,
// of the process and every descendant it waited for, as wait4 reports them); a failing
// command makes the comparison meaningless.
func run(argv []string) (wall, cpu time.Duration) {
	start := time.Now()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	if fd3Path != "" {
		// Opened afresh for each run: bwrap reads the filter to the end, and a shared
		// descriptor would leave the next run an empty one.
		file, err := os.Open(fd3Path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchcmp: %v\n", err)
			os.Exit(2)
		}
		defer file.Close()
		cmd.ExtraFiles = []*os.File{file}
	}
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "benchcmp: %v: %v\n", argv, err)
		os.Exit(1)
	}
	wall = time.Since(start)
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

func median(times []time.Duration) time.Duration {
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
