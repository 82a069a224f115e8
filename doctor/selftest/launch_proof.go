package selftest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// LaunchProof judges the launch check's run: bwrap reported the child, and the probe ran in
// namespaces other than the doctor's own.
func LaunchProof(_ context.Context, _ *Env, launched Launched) report.Check {
	return launchProofVerdict(launched.Result, launched.Observation, ownNamespaces())
}

func ownNamespaces() map[string]string {
	namespaces := map[string]string{}
	for _, kind := range probe.NamespaceKinds() {
		if link, err := os.Readlink("/proc/self/ns/" + kind); err == nil {
			namespaces[kind] = link
		}
	}
	return namespaces
}

// launchProofVerdict: bwrap reported the child (Started) and the probe ran in namespaces
// other than the doctor's own.
func launchProofVerdict(result sandbox.Result, inside probe.LaunchObservation, outside map[string]string) report.Check {
	if !result.Started {
		return breach("bwrap never reported the sandboxed child (no child-pid)", "")
	}
	var shared, separate []string
	for _, kind := range probe.NamespaceKinds() {
		in, out := inside.Namespaces[kind], outside[kind]
		switch {
		case in == "" || out == "":
			continue
		case in == out:
			shared = append(shared, kind)
		default:
			separate = append(separate, kind)
		}
	}
	detail := fmt.Sprintf("child-pid reported; inside: pid %d, uid %d; own namespaces: %s", inside.PID, inside.UID, strings.Join(separate, " "))
	if len(shared) > 0 {
		return breach("the command shares the host's "+strings.Join(shared, ", ")+" namespace", detail)
	}
	if !slices.Contains(separate, "user") || !slices.Contains(separate, "pid") || !slices.Contains(separate, "mnt") {
		return breach("the command's namespaces could not be told apart from the host's", detail)
	}
	return pass(fmt.Sprintf("bwrap reported the child; it ran in its own %s namespaces", strings.Join(separate, ", ")), detail)
}
