package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/bwrapkit/bwrapkit/locate"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// A command run in a sandbox over a project directory: the policy is built by NewPolicy
// (Run takes no other), the bwrap found as `bwrapkit locate` finds it, and an
// *UnavailableError means the command did not run at all.
func ExampleRun() {
	workdir, _ := os.MkdirTemp("", "example-project-")
	defer os.RemoveAll(workdir)

	policy, err := sandbox.NewPolicy(sandbox.Request{Workdir: workdir}, os.Environ())
	if err != nil {
		fmt.Println("refused:", err) // a *PolicyError names the field and the reason
		return
	}
	found, err := locate.Find(locate.Query{Env: os.Getenv("BWRAPKIT_BWRAP"), PATH: os.Getenv("PATH")}, locate.OS{})
	if err != nil {
		fmt.Println("no bwrap:", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	result, err := sandbox.Run(ctx, policy, []string{"/bin/sh", "-c", "echo hello from the sandbox"},
		sandbox.Options{Bwrap: found.Path, Stdout: os.Stdout, Timeout: 10 * time.Second})
	var unavailable *sandbox.UnavailableError
	if errors.As(err, &unavailable) {
		fmt.Println("the command did not run:", unavailable.Reason)
		return
	}
	fmt.Println("started:", result.Started, "exit:", result.ExitCode)
	// Output:
	// hello from the sandbox
	// started: true exit: 0
}

// A policy built by hand is refused before anything runs: Run enforces what NewPolicy
// set up (read-only .git, the host's /proc surface), so it takes no other policy.
func ExampleRun_refused() {
	_, err := sandbox.Run(context.Background(), sandbox.Policy{Workdir: "/src/app"}, []string{"make"}, sandbox.Options{Bwrap: "/usr/bin/bwrap"})
	var unavailable *sandbox.UnavailableError
	if errors.As(err, &unavailable) {
		fmt.Println(unavailable.Reason)
	}
	// Output:
	// invalid-policy
}
