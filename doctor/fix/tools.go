package fix

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/capped"
	"github.com/bwrapkit/bwrapkit/internal/pathlist"
)

// ToolPath is a LookPath for the administrators' tools --fix runs (apparmor_parser,
// sysctl): they live in sbin, which a user's or a cron job's PATH may lack, so the sbin
// directories are searched after path.
func ToolPath(path string) func(name string) (string, error) {
	return lookPathIn(path + ":/usr/local/sbin:/usr/sbin:/sbin")
}

// lookPathIn finds an executable regular file in a PATH-style list (internal/pathlist's
// one PATH walk: empty and relative entries are skipped).
func lookPathIn(pathList string) func(name string) (string, error) {
	return func(name string) (string, error) {
		if found, ok := pathlist.Look(pathList, name, pathlist.IsExecutable); ok {
			return found, nil
		}
		return "", fmt.Errorf("%s not found in %s", name, pathList)
	}
}

// RunTool runs a tool non-interactively, the real Env.RunCommand: stdin is the null
// device (exec's default for a nil Stdin), and its output is kept for the error only,
// since stdout is the report's.
func RunTool(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	output := capped.NewHead(nil) // kept for the error only, and bounded
	cmd.Stdout, cmd.Stderr = output, output
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		said := strings.TrimSpace(output.String())
		if said != "" {
			return fmt.Errorf("%w: %s", err, said)
		}
		return err
	}
	return nil
}
