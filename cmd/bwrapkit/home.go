package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/bwrapkit/bwrapkit/home"
)

// homeOptions are `bwrapkit home ls` and `home prune`'s flags.
type homeOptions struct {
	streams
	json      bool
	olderThan string
	project   string
	all       bool
	now       func() time.Time
}

func newHomeCmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "home",
		Short: "List and prune the per-project HOMEs runs keep their tools' caches in",
		Long: `Every project gets a HOME of its own under ~/.cache/bwrapkit/home (or
$XDG_CACHE_HOME/bwrapkit/home), where its runs keep Go's, npm's and pip's caches.
ls shows each with its project, size and last use; prune removes the ones you name.`,
		Args: noArgs,
	}
	cmd.AddCommand(newHomeLsCmd(s, runHomeLs), newHomePruneCmd(s, runHomePrune))
	return cmd
}

func newHomeLsCmd(s streams, runF func(context.Context, *homeOptions) error) *cobra.Command {
	opts := &homeOptions{streams: s, now: time.Now}
	cmd := &cobra.Command{
		Use:   "ls [--json]",
		Short: "List the project HOMEs: project, size, last use, in use",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), opts) },
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, `print {"schema":"bwrapkit.homes/v1","total_bytes","homes":[...]}`)
	return cmd
}

func newHomePruneCmd(s streams, runF func(context.Context, *homeOptions) error) *cobra.Command {
	opts := &homeOptions{streams: s, now: time.Now}
	cmd := &cobra.Command{
		Use:   "prune [--older-than D] [--project DIR] [--all] [--json]",
		Short: "Remove project HOMEs: those matching every criterion given; one a run holds is kept",
		Long: `Remove the project HOMEs that match every criterion given (at least one is needed):
--older-than D (last use longer ago; D as 36h or 30d), --project DIR (that project's),
--all. Only bwrapkit's own directories in the HOMEs' root are removed, nothing is
followed through a link, and a HOME that a run holds right now is kept and named.
Each removed HOME is printed; exit 1 when one could not be removed.`,
		Example: `  bwrapkit home prune --older-than 30d
  bwrapkit home prune --project .
  bwrapkit home prune --all`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), opts) },
	}
	flags := cmd.Flags()
	flags.StringVar(&opts.olderThan, "older-than", "", "only HOMEs last used longer ago than `D` (Go duration, or days as 30d)")
	flags.StringVar(&opts.project, "project", "", "only the HOME of project `DIR`")
	flags.BoolVar(&opts.all, "all", false, "every HOME (still keeping those in use)")
	flags.BoolVar(&opts.json, "json", false, "print what was removed and kept as JSON")
	return cmd
}

type homesDoc struct {
	Schema     string       `json:"schema"`
	TotalBytes int64        `json:"total_bytes"`
	Homes      []home.Entry `json:"homes"`
}

func runHomeLs(_ context.Context, opts *homeOptions) error {
	entries, err := home.List(home.Roots(opts.Environ()))
	if err != nil {
		return err
	}
	if opts.json {
		return writeJSON(opts, homesDoc{Schema: "bwrapkit.homes/v1", TotalBytes: home.TotalSize(entries), Homes: nonNil(entries)})
	}
	table := tabwriter.NewWriter(opts.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(table, "SIZE\tLAST USE\tPROJECT\tHOME")
	for _, entry := range entries {
		fmt.Fprintf(table, "%s\t%s\t%s\t%s\n", humanSize(entry.Size), describeUse(entry, opts.now()), describeProject(entry), entry.Path)
	}
	fmt.Fprintf(table, "%s\t\t%d HOMEs\t\n", humanSize(home.TotalSize(entries)), len(entries))
	return table.Flush()
}

type pruneDoc struct {
	Schema  string       `json:"schema"`
	Removed []home.Entry `json:"removed"`
	Kept    []keptHome   `json:"kept"`
}

type keptHome struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

func runHomePrune(_ context.Context, opts *homeOptions) error {
	selection := home.Selection{All: opts.all}
	if opts.olderThan != "" {
		age, err := parseAge(opts.olderThan)
		if err != nil {
			return usagef("--older-than %s: %v", opts.olderThan, err)
		}
		selection.OlderThan = age
	}
	if opts.project != "" {
		project, err := filepath.Abs(opts.project)
		if err == nil {
			if real, err := filepath.EvalSymlinks(project); err == nil {
				project = real
			}
		}
		selection.Project = project
	}
	if selection.Empty() {
		return usagef("name what to prune: --older-than D, --project DIR or --all (see `bwrapkit home ls`)")
	}
	roots := home.Roots(opts.Environ())
	entries, err := home.List(roots)
	if err != nil {
		return err
	}
	doc := pruneDoc{Schema: "bwrapkit.homes-prune/v1", Removed: []home.Entry{}, Kept: []keptHome{}}
	failed := false
	for _, entry := range entries {
		if entry.InUse && home.Select([]home.Entry{{Path: entry.Path, Project: entry.Project, LastUse: entry.LastUse}}, selection, opts.now()) != nil {
			doc.Kept = append(doc.Kept, keptHome{entry.Path, "in use by a run"})
		}
	}
	for _, entry := range home.Select(entries, selection, opts.now()) {
		if !home.InRoot(entry.Path, roots) {
			continue
		}
		err := home.Remove(entry.Path)
		switch {
		case errors.Is(err, home.ErrInUse):
			doc.Kept = append(doc.Kept, keptHome{entry.Path, "in use by a run"})
		case err != nil:
			failed = true
			doc.Kept = append(doc.Kept, keptHome{entry.Path, err.Error()})
		default:
			doc.Removed = append(doc.Removed, entry)
		}
	}
	if opts.json {
		if err := writeJSON(opts, doc); err != nil {
			return err
		}
	} else {
		for _, entry := range doc.Removed {
			fmt.Fprintf(opts.Out, "removed %s (%s, %s)\n", entry.Path, describeProject(entry), humanSize(entry.Size))
		}
		for _, kept := range doc.Kept {
			fmt.Fprintf(opts.Out, "kept %s: %s\n", kept.Path, kept.Reason)
		}
		fmt.Fprintf(opts.Out, "%d removed, %s freed\n", len(doc.Removed), humanSize(home.TotalSize(doc.Removed)))
	}
	if failed {
		return exitError{exitFailure}
	}
	return nil
}

func writeJSON(opts *homeOptions, doc any) error {
	data, _ := json.MarshalIndent(doc, "", "  ")
	_, err := opts.Out.Write(append(data, '\n'))
	return err
}

func nonNil(entries []home.Entry) []home.Entry {
	if entries == nil {
		return []home.Entry{}
	}
	return entries
}

// parseAge is a Go duration, or a whole number of days ("30d"): HOMEs age in days.
func parseAge(text string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(text, "d"); ok {
		count, err := strconv.Atoi(days)
		if err != nil || count <= 0 {
			return 0, errors.New("want a positive number of days (30d) or a Go duration (36h)")
		}
		return time.Duration(count) * 24 * time.Hour, nil
	}
	age, err := time.ParseDuration(text)
	if err != nil || age <= 0 {
		return 0, errors.New("want a positive number of days (30d) or a Go duration (36h)")
	}
	return age, nil
}

func describeProject(entry home.Entry) string {
	switch {
	case entry.Project == "":
		return "(unrecorded)"
	case entry.Gone:
		return entry.Project + " (gone)"
	}
	return entry.Project
}

func describeUse(entry home.Entry, now time.Time) string {
	if entry.InUse {
		return "in use"
	}
	age := now.Sub(entry.LastUse)
	switch {
	case age < time.Hour:
		return fmt.Sprintf("%dm ago", int(age.Minutes()))
	case age < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(age.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(age.Hours()/24))
}

// humanSize is a size as du -h would round it.
func humanSize(bytes int64) string {
	const unit = 1024
	if bytes < unit {
		return fmt.Sprintf("%dB", bytes)
	}
	value, suffix := float64(bytes), ""
	for _, next := range []string{"K", "M", "G", "T"} {
		value, suffix = value/unit, next
		if value < unit {
			break
		}
	}
	return fmt.Sprintf("%.1f%s", value, suffix)
}
