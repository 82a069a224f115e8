package selftest

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// Capabilities is the self-test of its name; see doctor/README.md for why it can fail and pass.
func Capabilities(_ *Env, _ sandbox.Policy, request *probe.Request) (Part, error) {
	request.Caps = true
	return Part{Judge: func(_ context.Context, launched Launched) report.Check {
		if launched.Observation.Caps == nil {
			return missing("capabilities")
		}
		return capabilitiesVerdict(*launched.Observation.Caps)
	}}, nil
}

// capabilitiesVerdict: no effective, permitted, inheritable or ambient capability.
func capabilitiesVerdict(caps probe.CapsObservation) report.Check {
	var held []string
	for _, set := range []string{"CapEff", "CapPrm", "CapInh", "CapAmb"} {
		value, ok := caps.Caps[set]
		if !ok {
			continue
		}
		if mask, err := strconv.ParseUint(value, 16, 64); err != nil || mask != 0 {
			held = append(held, set+"="+value)
		}
	}
	detail := fmt.Sprintf("CapEff=%s CapPrm=%s CapBnd=%s", caps.Caps["CapEff"], caps.Caps["CapPrm"], caps.Caps["CapBnd"])
	if _, ok := caps.Caps["CapEff"]; !ok {
		return report.Check{Status: report.StatusFail, Summary: "the probe could not read its capabilities", Detail: detail}
	}
	if len(held) > 0 {
		return breach("the command holds capabilities: "+strings.Join(held, " "), detail)
	}
	return pass("the command holds no capabilities (CapEff 0)", detail)
}
