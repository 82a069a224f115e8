package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bwrapkit/bwrapkit/locate"
)

type locateOptions struct {
	streams
	global *globalOptions
	json   bool
}

func newLocateCmd(s streams, global *globalOptions) *cobra.Command {
	opts := &locateOptions{streams: s, global: global}
	cmd := &cobra.Command{
		Use:   "locate [--json]",
		Short: "Print the path of the bwrap that run would use",
		Long: `Print the absolute (symlink-resolved) path of the bwrap "bwrapkit run" would use.
Order: --bwrap, then BWRAPKIT_BWRAP, then the first executable regular file named bwrap
on PATH, then the managed install <home>/bin/bwrap. An explicit choice that is unusable
is an error, never a fallback. A bwrap another non-root user could replace (the file or a
directory above it owned by another non-root uid, or group- or world-writable without the
sticky bit) is unusable.

Exit status: 0 found; 1 none usable (stderr says what to do); 2 bad usage.`,
		Example: `  bwrapkit locate
  bwrapkit locate --json | jq .candidates`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return runLocate(opts) },
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, `print {"path","source","candidates"} as JSON`)
	return cmd
}

func runLocate(opts *locateOptions) error {
	found, err := locate.Find(opts.global.query(opts.streams), locate.OS{})
	if opts.json {
		if found.Candidates == nil {
			found.Candidates = []locate.Candidate{}
		}
		data, _ := json.MarshalIndent(found, "", "  ")
		fmt.Fprintln(opts.Out, string(data))
	} else if err == nil {
		fmt.Fprintln(opts.Out, found.Path)
	}
	if err != nil {
		return failureError{fmt.Errorf("%w\n  next: %s", err, locate.Remedy(err))}
	}
	return nil
}
