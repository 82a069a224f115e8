package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/environ"
	"github.com/bwrapkit/bwrapkit/internal/pathlist"
	"github.com/bwrapkit/bwrapkit/locate"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// NeedRootError says the package manager needs root; Command is what to run as root.
type NeedRootError struct {
	Manager string
	Command string
}

func (e *NeedRootError) Error() string {
	return fmt.Sprintf("installing bubblewrap with %s needs root; nothing was changed. Run as root:\n  %s", e.Manager, e.Command)
}

// packageWaitDelay bounds how long output pipes are drained after the manager exits or
// is killed: a grandchild that kept them open must not hang the install.
const packageWaitDelay = 5 * time.Second

func installPackage(ctx context.Context, opts Options) (Result, error) {
	path, _ := environ.Lookup(opts.Environ, "PATH")
	manager, program, err := ChooseManager(path, pathlist.IsExecutable)
	if err != nil {
		return Result{}, err
	}
	if opts.Geteuid() != 0 {
		return Result{}, &NeedRootError{Manager: manager.Name, Command: manager.CommandLine()}
	}
	before, _ := packagedBwrap(path, opts.PackageDirs)

	env := environ.Merge(opts.Environ, manager.Env)
	opts.Progress.Note(fmt.Sprintf("installing bubblewrap with %s %s", program, strings.Join(manager.Install, " ")))
	err = runGroup(ctx, program, manager.Install, env, opts.PackageOutput)
	if err != nil && manager.Refresh != nil && ctx.Err() == nil {
		opts.Progress.Note(fmt.Sprintf("%s failed (%v); refreshing package lists and retrying", manager.Name, err))
		if err = runGroup(ctx, program, manager.Refresh, env, opts.PackageOutput); err == nil {
			err = runGroup(ctx, program, manager.Install, env, opts.PackageOutput)
		}
	}
	if err != nil {
		return Result{}, fmt.Errorf("%s did not install bubblewrap: %w", manager.Name, err)
	}

	after, err := packagedBwrap(path, opts.PackageDirs)
	if err != nil {
		return Result{}, fmt.Errorf("%s succeeded but no usable bwrap is on PATH: %w", manager.Name, err)
	}
	result := Result{Method: Package, Path: after.path, SHA256: after.sha256, Changed: after != before}
	features, err := sandbox.Probe(ctx, after.path)
	if err != nil {
		return result, fmt.Errorf("%s installed %s, but it does not run: %w", manager.Name, after.path, err)
	}
	result.Version = features.Version
	if missing := features.Missing(); len(missing) > 0 {
		return result, fmt.Errorf("%s installed %s (%s), which lacks options bwrapkit needs: --%s; use --method pinned",
			manager.Name, after.path, features.Build, strings.Join(missing, ", --"))
	}
	opts.Progress.Note(fmt.Sprintf("%s installed %s (%s)", manager.Name, after.path, features.Build))
	return result, nil
}

type installedBwrap struct{ path, sha256 string }

// packagedBwrap is the bwrap on PATH and its hash, to tell whether the manager changed it.
func packagedBwrap(path string, dirs []string) (installedBwrap, error) {
	found, err := locate.Find(locate.Query{PATH: path, SystemDirs: dirs}, locate.OS{})
	if err != nil {
		return installedBwrap{}, err
	}
	sum, _, err := hashFile(found.Path)
	if err != nil {
		return installedBwrap{}, err
	}
	return installedBwrap{path: found.Path, sha256: sum}, nil
}

// runGroup runs a package manager in its own process group with stdin on /dev/null, and
// at the deadline kills the whole group: a manager's helpers (dpkg, scriptlets) must not
// outlive it.
func runGroup(ctx context.Context, program string, args, env []string, output io.Writer) error {
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Env = env
	cmd.Stdin = nil // os/exec connects /dev/null: a prompt reads end-of-file, it cannot wait
	if output != io.Discard {
		cmd.Stdout, cmd.Stderr = output, output
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = packageWaitDelay
	err := cmd.Run()
	if ctx.Err() != nil {
		return fmt.Errorf("%s %s was killed with its process group: %w", program, strings.Join(args, " "), ctx.Err())
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("%s %s: %w", program, strings.Join(args, " "), err)
	}
	return err
}
