package selftest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// WorkdirWrite is the self-test of its name; see doctor/README.md for why it can fail and pass.
func WorkdirWrite(env *Env, _ sandbox.Policy, request *probe.Request) (Part, error) {
	target := filepath.Join(env.Scene.workdir, "written-"+env.Scene.token)
	addFS(request, "workdir-write", "create:"+target)
	return Part{Judge: func(_ context.Context, launched Launched) report.Check {
		ops := launched.Observation.FS["workdir-write"]
		if len(ops) != 1 {
			return missing("write in the workdir")
		}
		content, hostErr := os.ReadFile(target)
		return workdirWriteVerdict(ops[0], string(content), hostErr)
	}}, nil
}

// addFS appends file operations to a group of the request.
func addFS(request *probe.Request, group string, specs ...string) {
	if request.FS == nil {
		request.FS = map[string][]string{}
	}
	request.FS[group] = append(request.FS[group], specs...)
}

// workdirWriteVerdict: the file the probe created inside is on the host with its content.
func workdirWriteVerdict(op probe.FileOp, hostContent string, hostErr error) report.Check {
	switch {
	case op.Error != "":
		return report.Check{Status: report.StatusFail, Summary: "writing in the workdir failed inside the sandbox: " + op.Error,
			Remedy: "the workdir must be writable by this user; a read-only or noexec workdir breaks toolchains"}
	case hostErr != nil:
		return breach("a file written in the workdir inside did not appear on the host", hostErr.Error())
	case hostContent != probe.Content:
		return breach("the file written in the workdir has other content on the host", strconv.Quote(hostContent))
	}
	return pass("a file written in the workdir appeared on the host", op.Path)
}
