package main

import (
	"encoding/json"
	"errors"

	"github.com/spf13/cobra"

	"github.com/bwrapkit/bwrapkit/internal/safefile"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

func newArgvCmd(s streams, global *globalOptions) *cobra.Command {
	opts := &runOptions{streams: s, global: global}
	var seccompFile string
	cmd := &cobra.Command{
		Use:   "argv [run flags] -- CMD [ARG...]",
		Short: "Print, as a JSON array, the bwrap command line run would exec",
		Long: `Print the complete argv (bwrap's path first) that "bwrapkit run" would exec for the
same flags, as one JSON array of strings, without the status fd. For toolchains that
exec bwrap themselves. --timeout and --report are accepted and have no effect here.

The argv has bwrap read its seccomp filter from descriptor 3 (--seccomp 3): write the
filter with --seccomp-file FILE and open it there when you exec the argv (in a shell:
3<FILE). Without it bwrap refuses to start, so a forgotten filter fails closed. The
argv binds paths, and nothing checks the finished sandbox before the command starts;
"bwrapkit run" binds the checked directories' descriptors and verifies the mounts first.

Exit status: 0 printed; 125 no usable bwrap (nothing printed); 2 bad usage.`,
		Example: `  bwrapkit argv -- make test
  bwrapkit argv --seccomp-file /tmp/filter.bpf -- make test
  bwrapkit argv --net --workdir /src/app -- npm ci | jq -r '.[]'`,
		Args: commandArgs(&opts.command, nil),
		RunE: func(cmd *cobra.Command, _ []string) error {
			bwrap, policy, err := prepare(cmd.Context(), opts)
			if err != nil {
				return err
			}
			argv, err := sandbox.Argv(bwrap, policy, opts.command)
			var policyErr *sandbox.PolicyError
			if errors.As(err, &policyErr) {
				return usageError{flagError{policyErr}}
			}
			if err != nil {
				return usageError{err}
			}
			if seccompFile != "" {
				// The filter must live where no sandbox of this policy can rewrite it: a
				// command could otherwise swap in an allow-all program for the next run.
				if err := policy.RefuseInside("--seccomp-file", seccompFile); err != nil {
					return usageError{err}
				}
				program, err := sandbox.SeccompProgram()
				if err != nil {
					return &sandbox.UnavailableError{Reason: sandbox.ReasonHardening, Bwrap: bwrap, Err: err}
				}
				if err := safefile.WriteFile(seccompFile, program, 0o644); err != nil {
					return usagef("--seccomp-file %s: %v", seccompFile, err)
				}
			}
			data, err := json.Marshal(argv)
			if err != nil {
				return err
			}
			_, err = opts.Out.Write(append(data, '\n'))
			return err
		},
	}
	addRunFlags(cmd, opts)
	cmd.Flags().StringVar(&seccompFile, "seccomp-file", "", "write the seccomp filter the argv reads on descriptor 3 to `FILE`")
	return cmd
}
