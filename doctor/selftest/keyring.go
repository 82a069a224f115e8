package selftest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// Keyring is the self-test of its name; see doctor/README.md for why it can fail and pass.
// Keyrings are not namespaced: the probe tries to reach one from inside and to plant a key
// in the caller's user keyring (one per uid, so the host can look for it from any thread),
// and the doctor looks for that key afterwards.
func Keyring(env *Env, _ sandbox.Policy, request *probe.Request) (Part, error) {
	description := "bwrapkit-doctor-" + env.Scene.token
	request.Keyring = description
	return Part{Judge: func(_ context.Context, launched Launched) report.Check {
		if launched.Observation.Keyring == nil {
			return missing("keyring attempts")
		}
		return keyringVerdict(*launched.Observation.Keyring, plantedKey(description))
	}}, nil
}

// plantedKey looks for the probe's key in the caller's user keyring and unlinks it if it is
// there: "" when it is not, else what was found. A kernel without keyrings has none.
func plantedKey(description string) string {
	id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", description, 0)
	switch {
	case err == nil:
		unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_USER_KEYRING, 0, 0)
		return fmt.Sprintf("key %d %q", id, description)
	case errors.Is(err, unix.ENOKEY), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return ""
	}
	return ""
}

// keyringVerdict: every keyring call was refused with EPERM (the filter's answer), /proc/keys
// shows no key, and nothing was planted in the caller's user keyring.
func keyringVerdict(observed probe.KeyringObservation, planted string) report.Check {
	var reached, detail []string
	for _, attempt := range observed.Attempts {
		detail = append(detail, attempt.Syscall+": "+orSucceeded(attempt.Errno))
		if attempt.Errno != "EPERM" {
			reached = append(reached, fmt.Sprintf("%s (%s)", attempt.Syscall, orSucceeded(attempt.Errno)))
		}
	}
	detail = append(detail, "/proc/keys: "+orNothingShown(observed.ProcKeys, observed.ProcKeysError))
	switch {
	case planted != "":
		return breach("the command planted a key in the caller's user keyring: "+planted+" (removed)", strings.Join(detail, "\n"))
	case observed.ProcKeys != "":
		return breach("/proc/keys lists keys inside: "+strconv.Quote(truncate(observed.ProcKeys, 60)), strings.Join(detail, "\n"))
	case len(reached) > 0:
		return breach("keyring calls are not refused inside: "+strings.Join(reached, ", "), strings.Join(detail, "\n"))
	case len(observed.Attempts) == 0:
		return report.Check{Status: report.StatusFail, Summary: "the probe made no keyring attempt"}
	}
	return pass("no keyring is reachable inside (keyctl, add_key, request_key: EPERM; /proc/keys empty); nothing planted in the caller's", strings.Join(detail, "\n"))
}
