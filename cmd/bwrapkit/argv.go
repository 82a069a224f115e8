package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/bwrapkit/bwrapkit/sandbox"
)

func newArgvCmd(s streams, global *globalOptions) *cobra.Command {
	opts := &runOptions{streams: s, global: global}
	cmd := &cobra.Command{
		Use:   "argv [run flags] -- CMD [ARG...]",
		Short: "Print, as a JSON array, the bwrap command line run would exec",
		Long: `Print the complete argv (bwrap's path first) that "bwrapkit run" would exec for the
same flags, as one JSON array of strings, without the status fd. For toolchains that
exec bwrap themselves. --timeout and --report are accepted and have no effect here.

Exit status: 0 printed; 125 no usable bwrap (nothing printed); 2 bad usage.`,
		Example: `  bwrapkit argv -- make test
  bwrapkit argv --net --workdir /src/app -- npm ci | jq -r '.[]'`,
		Args: commandArgs(&opts.command),
		RunE: func(cmd *cobra.Command, _ []string) error {
			bwrap, policy, err := prepare(cmd.Context(), opts)
			if err != nil {
				return err
			}
			argv, err := sandbox.Argv(bwrap, policy, opts.command)
			if err != nil {
				return usageError{err}
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
	return cmd
}
