package main

import (
	"github.com/spf13/cobra"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
)

// probeCommandName is the hidden subcommand the doctor runs inside the sandbox, so its
// self-tests need no shell or other program there: bwrapkit-helper, or bwrapkit, is the
// probe.
const probeCommandName = probe.CommandName

func newSelftestProbeCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:                probeCommandName + " NAME [ARG...]",
		Short:              "Internal: the doctor's probe inside the sandbox",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if status := probe.Main(args, probe.BuildID(version), s.Out, s.Err); status != 0 {
				return exitError{status}
			}
			return nil
		},
	}
}
