package main

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bwrapkit/bwrapkit/internal/trust"
	"github.com/bwrapkit/bwrapkit/locate"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// globalOptions are the flags every command shares.
type globalOptions struct {
	Bwrap string // --bwrap: an explicit bwrap, never fallen back from
	Home  string // --home: bwrapkit's home (managed install, locks)
}

// home resolves bwrapkit's home for this user.
func (g *globalOptions) home(s streams) string {
	viewer := trust.Current()
	viewer.UID = uint32(os.Getuid())
	return locate.HomeIn(g.Home, s.Getenv, viewer)
}

// query is the locate query these options and environment describe. With no home named
// (--home, BWRAPKIT_HOME), root's managed install follows the user's own: a bwrap that
// root installed serves everyone. A named home is searched alone.
func (g *globalOptions) query(s streams) locate.Query {
	q := locate.Query{Flag: g.Bwrap, Env: s.Getenv("BWRAPKIT_BWRAP"), PATH: s.Getenv("PATH"), Home: g.home(s)}
	if g.Home == "" && s.Getenv("BWRAPKIT_HOME") == "" {
		q.SystemHome = locate.SystemHome
	}
	return q
}

func newRootCmd(s streams) *cobra.Command {
	global := &globalOptions{}
	root := &cobra.Command{
		Use:   "bwrapkit",
		Short: "Make bwrap a dependable, provable sandbox",
		Long: `bwrapkit finds bwrap, explains why this host can or cannot sandbox, installs a
pinned static bwrap where one is missing, and runs commands behind a fail-closed boundary.`,
		Example: `  bwrapkit doctor
  bwrapkit install
  bwrapkit run --workdir ./project -- make test`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.PersistentFlags().StringVar(&global.Bwrap, "bwrap", "", "use this bwrap binary (no fallback if it is unusable)")
	root.PersistentFlags().StringVar(&global.Home, "home", "", "bwrapkit home (default: $BWRAPKIT_HOME, /usr/local/lib/bwrapkit for root, else ~/.local/share/bwrapkit)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })

	// Every command, in one list.
	root.AddCommand(
		newRunCmd(s, global),
		newArgvCmd(s, global),
		newLocateCmd(s, global),
		newDoctorCmd(s, global),
		newInstallCmd(s, global),
		newHomeCmd(s),
		newSelftestProbeCmd(s),
		newVersionCmd(s),
	)
	return root
}

// isCobraUsage recognises cobra's own usage errors, which are not typed.
func isCobraUsage(err error) bool {
	message := err.Error()
	return strings.HasPrefix(message, "unknown command") ||
		strings.HasPrefix(message, "unknown flag") ||
		strings.HasPrefix(message, "unknown shorthand flag") ||
		strings.HasPrefix(message, "invalid argument")
}

func newVersionCmd(s streams) *cobra.Command {
	asJSON := false
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print bwrapkit's version",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return printVersion(cmd.OutOrStdout(), asJSON) },
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"schema","version","embedded_bwrap"} as JSON`)
	return cmd
}

// noArgs refuses positional arguments as a usage error.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}
