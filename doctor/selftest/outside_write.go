package selftest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
)

// OutsideWrite is the self-test of its name; see doctor/README.md for why it can fail and pass.
func OutsideWrite(ctx context.Context, env *Env, launched Launched) report.Check {
	fixture := env.Scene
	name := "outside-" + fixture.token
	targets := []string{
		filepath.Join(fixture.base, name),    // the workdir's parent
		filepath.Join(fixture.sibling, name), // a sibling directory
		filepath.Join("/etc", name),
		filepath.Join("/", name),
	}
	args := make([]string, len(targets))
	for i, target := range targets {
		args[i] = "create:" + target
	}
	observation, err := Decode[probe.FSObservation](env.Run(ctx, ProbeRun{Name: "fs", Args: args}))
	if err != nil {
		return Failed("the write probe did not run", err)
	}
	var changes []string
	for _, target := range targets {
		if _, err := os.Lstat(target); err == nil {
			changes = append(changes, target)
			os.Remove(target) // the breach is reported; the host need not keep it
		}
	}
	if entries, _ := os.ReadDir(fixture.sibling); len(entries) > 0 {
		changes = append(changes, fixture.sibling+"/"+entries[0].Name())
	}
	return outsideWriteVerdict(observation.Ops, changes)
}

// privateTmpfs are the sandbox's own tmpfs mounts: a write there succeeds and vanishes with
// the sandbox. Anywhere else outside the workdir the root is read-only, so a write must fail.
var privateTmpfs = []string{"/tmp", "/var/tmp", "/run"}

// outsideWriteVerdict: nothing changed on the host, and every write outside the workdir and
// the private tmpfs mounts was refused (the contract's read-only root, not a throwaway one).
func outsideWriteVerdict(ops []probe.FileOp, hostChanges []string) report.Check {
	var detail, landed []string
	for _, op := range ops {
		outcome := "refused: " + op.Error
		if op.Error == "" {
			outcome = "landed in the sandbox's private tmpfs"
			if !underAny(op.Path, privateTmpfs) {
				outcome = "succeeded"
				landed = append(landed, op.Path)
			}
		}
		detail = append(detail, fmt.Sprintf("%s %s: %s", op.Op, op.Path, outcome))
	}
	switch {
	case len(hostChanges) > 0:
		return breach("writes outside the workdir reached the host: "+strings.Join(hostChanges, ", "), strings.Join(detail, "\n"))
	case len(landed) > 0:
		return breach("writes outside the workdir succeeded inside (the root is not read-only): "+strings.Join(landed, ", "), strings.Join(detail, "\n"))
	case len(ops) == 0:
		return report.Check{Status: report.StatusFail, Summary: "the probe reported no writes"}
	}
	return pass(fmt.Sprintf("%d writes outside the workdir (its parent, a sibling, /etc, /) left the host unchanged", len(ops)), strings.Join(detail, "\n"))
}

func underAny(path string, dirs []string) bool {
	for _, dir := range dirs {
		if path == dir || strings.HasPrefix(path, dir+"/") {
			return true
		}
	}
	return false
}
