package selftest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// SetuidRefused is the self-test of its name; see doctor/README.md for why it can fail and
// pass. The probe works in a directory of its own in the workdir; the host looks at it after.
func SetuidRefused(env *Env, _ sandbox.Policy, request *probe.Request) (Part, error) {
	dir := filepath.Join(env.Scene.workdir, "setuid-"+env.Scene.token)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return Part{}, err
	}
	request.Setuid = dir
	return Part{Judge: func(_ context.Context, launched Launched) report.Check {
		if launched.Observation.Setuid == nil {
			return missing("setuid attempts")
		}
		return setuidVerdict(*launched.Observation.Setuid, setIDFiles(dir))
	}}, nil
}

// setIDFiles lists what under dir carries a setuid or setgid bit on the host, and takes the
// bits off at once: the breach is reported, the host need not keep a setuid file.
func setIDFiles(dir string) []string {
	var found []string
	filepath.WalkDir(dir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := os.Lstat(path)
		if err == nil && info.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			found = append(found, fmt.Sprintf("%s (%v)", path, info.Mode()))
			os.Chmod(path, info.Mode().Perm()&0o700)
		}
		return nil
	})
	return found
}

// setuidVerdict: every attempt was refused with EPERM (the filter's answer), an ordinary
// chmod still worked, and no file on the host has the bits.
func setuidVerdict(observed probe.SetuidObservation, onHost []string) report.Check {
	var allowed, detail []string
	for _, attempt := range observed.Attempts {
		detail = append(detail, attempt.Syscall+": "+orSucceeded(attempt.Errno))
		if attempt.Errno != "EPERM" {
			allowed = append(allowed, fmt.Sprintf("%s (%s)", attempt.Syscall, orSucceeded(attempt.Errno)))
		}
	}
	detail = append(detail, "chmod 0700: "+orSucceeded(observed.Control))
	switch {
	case len(onHost) > 0:
		return breach("files with setuid or setgid bits reached the host: "+strings.Join(onHost, ", "), strings.Join(detail, "\n"))
	case len(allowed) > 0:
		return breach("setuid or setgid modes are not refused inside: "+strings.Join(allowed, ", "), strings.Join(detail, "\n"))
	case len(observed.Attempts) == 0:
		return report.Check{Status: report.StatusFail, Summary: "the probe made no setuid attempt: " + OrNothing(observed.Control), Detail: strings.Join(detail, "\n")}
	case observed.Control != "":
		return report.Check{Status: report.StatusFail, Summary: "an ordinary chmod failed inside (" + observed.Control + "): the sandbox refuses more than setuid and setgid bits",
			Detail: strings.Join(detail, "\n"), Remedy: boundaryRemedy}
	}
	return pass(fmt.Sprintf("%d ways to make a setuid or setgid file or directory were refused (EPERM); none reached the host", len(observed.Attempts)), strings.Join(detail, "\n"))
}
