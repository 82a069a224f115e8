package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/diagnose"
	"github.com/bwrapkit/bwrapkit/doctor/provenance"
	"github.com/bwrapkit/bwrapkit/doctor/remedy"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/internal/trust"
	"github.com/bwrapkit/bwrapkit/locate"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

func (s *session) checkFound(context.Context) report.Check {
	located := s.located.get()
	found, err := located.result, located.err
	if err != nil {
		check := report.Check{Status: report.StatusFail, Summary: err.Error(), Detail: candidatesDetail(found.Candidates),
			Remedy: locate.Remedy(err)}
		var explicit *locate.ExplicitError
		if !errors.As(err, &explicit) && !locate.OwnerAmbiguous(err) {
			check.Fix = remedy.InstallFix("")
		}
		return check
	}
	summary := fmt.Sprintf("%s (from %s)", found.Path, sourceText(found.Source))
	if shadowed := shadowedBy(found); len(shadowed) > 0 {
		summary += fmt.Sprintf("; it shadows %s", strings.Join(shadowed, ", "))
	}
	return report.Check{Status: report.StatusOK, Summary: summary, Detail: candidatesDetail(found.Candidates)}
}

func sourceText(source locate.Source) string {
	switch source {
	case locate.SourceFlag:
		return "--bwrap"
	case locate.SourceEnv:
		return "BWRAPKIT_BWRAP"
	case locate.SourcePath:
		return "PATH"
	case locate.SourceManaged:
		return "the managed install"
	}
	return string(source)
}

// shadowedBy lists the usable bwraps after the chosen one: a different binary that a
// different PATH (a cron job's, a service's) would pick instead.
func shadowedBy(found locate.Result) []string {
	var shadowed []string
	for _, candidate := range found.Candidates {
		if candidate.Usable && candidate.Real != found.Path {
			shadowed = append(shadowed, candidate.Path)
		}
	}
	return shadowed
}

func candidatesDetail(candidates []locate.Candidate) string {
	lines := make([]string, 0, len(candidates))
	for _, candidate := range candidates {
		line := fmt.Sprintf("%s: %s", candidate.Source, candidate.Path)
		if candidate.Real != "" && candidate.Real != candidate.Path {
			line += " -> " + candidate.Real
		}
		if candidate.Reason != "" {
			line += " (" + candidate.Reason + ")"
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

func (s *session) checkPermissions(context.Context) report.Check {
	path := s.bwrapPath()
	binary := s.binary.get()
	if binary.Err != nil {
		return report.Check{Status: report.StatusFail, Summary: "cannot inspect " + path + ": " + binary.Err.Error()}
	}
	return permissionsVerdict(path, binary, trust.Current(), s.facts().Sudo())
}

// permissionsVerdict decides over the binary's mode, ownership and linkage. A bwrap that
// another non-root user could replace fails, as `bwrapkit run` refuses it (locate's
// ReplaceableBy, the one rule): whoever replaces it owns every later sandbox. A setuid bit
// warns: it works, and every bwrap bug is then a root exploit.
func permissionsVerdict(path string, binary binaryFacts, viewer trust.Viewer, sudo string) report.Check {
	linkage := "dynamically linked"
	if binary.Static {
		linkage = "statically linked"
	}
	if binary.ELFError != "" {
		linkage = "not a readable ELF binary (" + binary.ELFError + ")"
	}
	var detail []string
	for _, entry := range binary.Entries {
		detail = append(detail, fmt.Sprintf("%v uid %d gid %d %s", entry.Mode, entry.UID, entry.GID, entry.Path))
	}
	detail = append(detail, linkage)
	if writers := locate.ReplaceableBy(binary.Entries, viewer); len(writers) > 0 {
		return report.Check{Status: report.StatusFail,
			Summary: "another user could replace the binary, and so own every sandbox (bwrapkit run refuses it): " + strings.Join(writers, "; "),
			Detail:  strings.Join(detail, "\n"),
			Remedy:  "make " + path + " and every directory above it owned and writable by root (or you) only, e.g. " + sudo + "chmod go-w " + remedy.Quote(path) + ", or run `bwrapkit install`",
			Fix:     remedy.InstallFix(path)}
	}
	var problems, remedies []string
	if binary.Setuid {
		problems = append(problems, "it is setuid root, so every bwrap bug is a root exploit (CVE-2020-5291, CVE-2026-41163)")
		remedies = append(remedies, "where unprivileged user namespaces work (see userns), remove the bit: "+remedy.RemoveSetuidCommand(sudo, path))
	}
	if len(problems) > 0 {
		check := report.Check{Status: report.StatusWarn, Summary: strings.Join(problems, "; "), Detail: strings.Join(detail, "\n"),
			Remedy: strings.Join(remedies, "\n")}
		if binary.Setuid {
			check.Fix = remedy.RemoveSetuidFix(sudo, path)
		}
		return check
	}
	summary := "not setuid, writable by root or its owner only, " + linkage
	if notes := trust.Notes(binary.Entries, viewer); len(notes) > 0 {
		summary = "not setuid, " + linkage + "; " + notes[0]
	}
	return report.Check{Status: report.StatusOK, Summary: summary, Detail: strings.Join(detail, "\n")}
}

func (s *session) checkVersion(ctx context.Context) report.Check {
	path := s.bwrapPath()
	// The package query and bwrap's own --help and --version run side by side.
	go s.owner.get()
	features, err := s.features()
	if err != nil {
		return report.Check{Status: report.StatusFail, Summary: path + " does not answer --help and --version like bwrap: " + err.Error(),
			Remedy: diagnose.InstallRemedy, Fix: remedy.InstallFix(path)}
	}
	owner := s.owner.get()
	return versionVerdict(features.Build, owner.pkg, owner.err)
}

// owned is the package that owns the bwrap in use, or why that is not known.
type owned struct {
	pkg *provenance.Package
	err error
}

func queryOwner(path string) owned {
	ctx, cancel := context.WithTimeout(context.Background(), 2*provenance.QueryTimeout)
	defer cancel()
	pkg, err := provenance.Owner(ctx, path, provenance.SystemLookPath, provenance.Run)
	if err != nil {
		return owned{err: err}
	}
	return owned{pkg: &pkg}
}

// versionVerdict decides over `bwrap --version` and the package that owns the binary (nil,
// with ownerErr saying why: none does, or the query failed).
func versionVerdict(build string, pkg *provenance.Package, ownerErr error) report.Check {
	detail := fmt.Sprintf("--version: %q", build)
	var notOwned *provenance.NotOwnedError
	switch {
	case pkg != nil:
		detail += "\npackage: " + pkg.String()
	case errors.As(ownerErr, &notOwned):
		detail += "\npackage: none (" + ownerErr.Error() + ")"
	case ownerErr != nil:
		detail += "\npackage: could not be read: " + ownerErr.Error()
	}
	version, ok := ParseVersion(build)
	if !ok {
		return report.Check{Status: report.StatusWarn, Summary: fmt.Sprintf("version unknown: --version prints %q", firstLine(build)), Detail: detail,
			Remedy: "a custom build cannot be matched against bubblewrap's security fixes; for a known one, run `bwrapkit install`",
			Fix:    remedy.InstallFix("")}
	}
	named := "bubblewrap " + version.String()
	if pkg != nil {
		named += " (package " + pkg.Name + " " + pkg.Version + ", " + pkg.Manager + ")"
	}
	unfixed := Unfixed(version)
	if len(unfixed) == 0 {
		return report.Check{Status: report.StatusOK, Summary: named, Detail: detail}
	}
	var cves []string
	for _, advisory := range unfixed {
		cves = append(cves, advisory.CVE)
		detail += fmt.Sprintf("\n%s: %s (fixed in %s)", advisory.CVE, advisory.What, advisory.FixedIn)
	}
	check := report.Check{Status: report.StatusWarn,
		Summary: fmt.Sprintf("%s predates %s: %s, unless your distribution backported the fixes", named, SafeVersion, strings.Join(cves, ", ")),
		Detail:  detail,
		Fix:     remedy.InstallFix("")}
	install := "run `bwrapkit install` for " + SafeVersion
	advice, command := "", ""
	if pkg != nil {
		advice, command = remedy.BackportCheck(pkg.Manager, pkg.Name, pkg.Version, cves)
	}
	switch {
	case advice != "":
		check.Remedy = "distributions backport fixes without changing the version; " + pkg.Name + " " + pkg.Version + " is " + advice + "; or " + install
	case errors.As(ownerErr, &notOwned):
		check.Remedy = "this bwrap belongs to no distribution package, so nothing was backported into it: " + install
	default:
		check.Remedy = "distributions backport fixes without changing the version (Debian 12 ships 0.8.0-2+deb12u1): " +
			"check your distribution's security tracker for bubblewrap, or " + install
	}
	if command != "" {
		check.RemedyCommands = []string{command}
	}
	check.RemedyCommands = append(check.RemedyCommands, remedy.InstallCommand)
	return check
}

func firstLine(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	return line
}

func (s *session) checkFeatures(ctx context.Context) report.Check {
	path := s.bwrapPath()
	features, err := s.features()
	if err != nil {
		return report.Check{Status: report.StatusFail, Summary: err.Error(), Remedy: diagnose.InstallRemedy}
	}
	if !features.IsBwrap() {
		// Nothing like bwrap's --help: its own words say why (a setuid refusal, say).
		facts := s.facts()
		facts.Reason, facts.Missing, facts.Stderr = sandbox.ReasonUnsupported, features.Missing(), s.bwrap.get().help
		diagnosis := diagnose.Diagnose(facts)
		return report.Check{Status: report.StatusFail, Summary: diagnosis.Summary, Detail: strings.Join(diagnosis.Evidence, "\n"),
			Remedy: diagnosis.Remedy, Fix: diagnosis.Fix, RemedyCommands: diagnosis.RemedyCommands()}
	}
	return featuresVerdict(path, features)
}

// featuresVerdict decides over the options --help lists.
func featuresVerdict(path string, features sandbox.Features) report.Check {
	detail := fmt.Sprintf("--help lists %d options", len(features.Options))
	install := remedy.InstallFix(path)
	missing := features.Missing()
	switch {
	case !features.IsBwrap():
		return report.Check{Status: report.StatusFail, Summary: path + " does not behave like bwrap: its --help lists none of the options the boundary needs",
			Detail: detail, Remedy: diagnose.InstallRemedy, Fix: install}
	case len(missing) > 0:
		return report.Check{Status: report.StatusFail, Summary: path + " lacks options the boundary needs: --" + strings.Join(missing, ", --"),
			Detail: detail, Remedy: diagnose.InstallRemedy, Fix: install}
	case !features.Has("disable-userns"):
		return report.Check{Status: report.StatusWarn,
			Summary: "no --disable-userns (bubblewrap 0.8.0+): code inside can create nested user namespaces, a usual first step of kernel exploits",
			Detail:  detail, Remedy: diagnose.InstallRemedy, Fix: install}
	}
	return report.Check{Status: report.StatusOK, Summary: "every option the boundary needs, and --disable-userns", Detail: detail}
}
