package selftest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// OutsideWrite is the self-test of its name; see doctor/README.md for why it can fail and pass.
func OutsideWrite(env *Env, _ sandbox.Policy, request *probe.Request) (Part, error) {
	fixture := env.Scene
	name := "outside-" + fixture.token
	targets := []string{
		filepath.Join(fixture.base, name),    // the workdir's parent
		filepath.Join(fixture.sibling, name), // a sibling directory
		filepath.Join("/etc", name),
		filepath.Join("/", name),
	}
	for _, target := range targets {
		addFS(request, "outside-write", "create:"+target)
	}
	return Part{Judge: func(_ context.Context, launched Launched) report.Check {
		ops, ok := launched.Observation.FS["outside-write"]
		if !ok {
			return missing("writes outside the workdir")
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
		return outsideWriteVerdict(ops, changes, sandbox.PrivateTmpfs())
	}}, nil
}

// outsideWriteVerdict: nothing changed on the host, and every write outside the workdir and
// the sandbox's private tmpfs mounts (privateTmpfs, as sandbox.PrivateTmpfs lists them: a
// write there succeeds and vanishes with the sandbox) was refused: the contract's
// read-only root, not a throwaway one.
func outsideWriteVerdict(ops []probe.FileOp, hostChanges, privateTmpfs []string) report.Check {
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
