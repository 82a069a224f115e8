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

// GitReadonly is the self-test of its name; see doctor/README.md for why it can fail and pass.
func GitReadonly(env *Env, _ sandbox.Policy, request *probe.Request) (Part, error) {
	fixture := env.Scene
	created := filepath.Join(filepath.Dir(fixture.gitConfig), "hooks-"+fixture.token)
	addFS(request, "git-readonly", "append:"+fixture.gitConfig, "remove:"+fixture.gitConfig, "create:"+created)
	return Part{Judge: func(_ context.Context, launched Launched) report.Check {
		ops, ok := launched.Observation.FS["git-readonly"]
		if !ok {
			return missing("writes under .git")
		}
		content, _ := os.ReadFile(fixture.gitConfig)
		if _, err := os.Lstat(created); err == nil {
			content = append(content, "\n(and a new file "+created+")"...)
		}
		return gitReadonlyVerdict(ops, string(content))
	}}, nil
}

// gitReadonlyVerdict: .git/config could be neither changed nor removed, and the host copy
// is as the doctor wrote it.
func gitReadonlyVerdict(ops []probe.FileOp, hostContent string) report.Check {
	var succeeded, detail []string
	for _, op := range ops {
		detail = append(detail, fmt.Sprintf("%s %s: %s", op.Op, op.Path, orSucceeded(op.Error)))
		if op.Error == "" {
			succeeded = append(succeeded, op.Op)
		}
	}
	switch {
	case hostContent != gitConfigContent:
		return breach(".git/config changed on the host", strings.Join(detail, "\n"))
	case len(succeeded) > 0:
		return breach(".git inside the workdir is writable: "+strings.Join(succeeded, ", ")+" succeeded", strings.Join(detail, "\n"))
	case len(ops) == 0:
		return report.Check{Status: report.StatusFail, Summary: "the probe reported no writes"}
	}
	return pass(".git/config could not be changed or removed; the host copy is intact", strings.Join(detail, "\n"))
}
