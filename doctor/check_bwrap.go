package doctor

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/bwrapkit/bwrapkit/locate"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

func (s *session) checkFound(context.Context) Check {
	located := s.located.get()
	found, err := located.result, located.err
	if err != nil {
		check := Check{Status: StatusFail, Summary: err.Error(), Detail: candidatesDetail(found.Candidates),
			Remedy: locate.Remedy(err)}
		var explicit *locate.ExplicitError
		if !errors.As(err, &explicit) {
			check.Fix = &Fix{Kind: FixInstall, Commands: []string{"bwrapkit install"}}
		}
		return check
	}
	summary := fmt.Sprintf("%s (from %s)", found.Path, sourceText(found.Source))
	if shadowed := shadowedBy(found); len(shadowed) > 0 {
		summary += fmt.Sprintf("; it shadows %s", strings.Join(shadowed, ", "))
	}
	return Check{Status: StatusOK, Summary: summary, Detail: candidatesDetail(found.Candidates)}
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

func (s *session) checkPermissions(context.Context) Check {
	path := s.bwrapPath()
	binary := s.binary.get()
	if binary.Err != nil {
		return Check{Status: StatusFail, Summary: "cannot inspect " + path + ": " + binary.Err.Error()}
	}
	return permissionsVerdict(path, binary, s.facts().sudo())
}

// permissionsVerdict decides over the binary's mode, ownership and linkage.
func permissionsVerdict(path string, binary binaryFacts, sudo string) Check {
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
	var problems, remedies []string
	if writers := ReplaceableBy(binary.Entries); len(writers) > 0 {
		problems = append(problems, "anyone who can replace the binary owns the sandbox: "+strings.Join(writers, "; "))
		remedies = append(remedies, "make "+path+" and every directory above it writable by root (or its owner) only, e.g. "+sudo+"chmod go-w "+shellQuote(path))
	}
	if binary.Setuid {
		problems = append(problems, "it is setuid root, so every bwrap bug is a root exploit (CVE-2020-5291, CVE-2026-41163)")
		remedies = append(remedies, "where unprivileged user namespaces work (see userns), remove the bit: "+sudo+"chmod u-s "+shellQuote(path))
	}
	if len(problems) > 0 {
		check := Check{Status: StatusWarn, Summary: strings.Join(problems, "; "), Detail: strings.Join(detail, "\n"),
			Remedy: strings.Join(remedies, "\n")}
		if binary.Setuid {
			check.Fix = &Fix{Kind: FixRemoveSetuid, Bwrap: path, Commands: []string{sudo + "chmod u-s " + shellQuote(path)}}
		}
		return check
	}
	return Check{Status: StatusOK, Summary: "not setuid, writable by root or its owner only, " + linkage, Detail: strings.Join(detail, "\n")}
}

func (s *session) checkVersion(ctx context.Context) Check {
	path := s.bwrapPath()
	features, err := s.features(ctx)
	if err != nil {
		return Check{Status: StatusFail, Summary: path + " does not answer --help and --version like bwrap: " + err.Error(),
			Remedy: installRemedy, Fix: &Fix{Kind: FixInstall, Bwrap: path, Commands: []string{"bwrapkit install"}}}
	}
	s.mu.Lock()
	s.probed = features
	s.mu.Unlock()
	return versionVerdict(features.Build)
}

// versionVerdict decides over `bwrap --version`.
func versionVerdict(build string) Check {
	detail := fmt.Sprintf("--version: %q", build)
	version, ok := ParseVersion(build)
	if !ok {
		return Check{Status: StatusWarn, Summary: fmt.Sprintf("version unknown: --version prints %q", firstLine(build)), Detail: detail,
			Remedy: "a custom build cannot be matched against bubblewrap's security fixes; for a known one, run `bwrapkit install`"}
	}
	unfixed := Unfixed(version)
	if len(unfixed) == 0 {
		return Check{Status: StatusOK, Summary: "bubblewrap " + version.String(), Detail: detail}
	}
	var cves []string
	for _, advisory := range unfixed {
		cves = append(cves, advisory.CVE)
		detail += fmt.Sprintf("\n%s: %s (fixed in %s)", advisory.CVE, advisory.What, advisory.FixedIn)
	}
	return Check{Status: StatusWarn,
		Summary: fmt.Sprintf("bubblewrap %s predates %s: %s, unless your distribution backported the fixes", version, SafeVersion, strings.Join(cves, ", ")),
		Detail:  detail,
		Remedy: "distributions backport fixes without changing the version (Debian 12 ships 0.8.0-2+deb12u1): " +
			"check your distribution's security tracker for bubblewrap, or run `bwrapkit install` for " + SafeVersion,
		Fix: &Fix{Kind: FixInstall, Commands: []string{"bwrapkit install"}}}
}

func firstLine(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	return line
}

func (s *session) checkFeatures(ctx context.Context) Check {
	path := s.bwrapPath()
	features, err := s.features(ctx)
	if err != nil {
		return Check{Status: StatusFail, Summary: err.Error(), Remedy: installRemedy}
	}
	if len(features.Missing()) == len(sandbox.Required()) {
		// Nothing like bwrap's --help: its own words say why (a setuid refusal, say).
		facts := s.facts()
		facts.Reason, facts.Missing, facts.Stderr = sandbox.ReasonUnsupported, features.Missing(), helpText(ctx, path)
		diagnosis := Diagnose(facts)
		return Check{Status: StatusFail, Summary: diagnosis.Summary, Detail: strings.Join(diagnosis.Evidence, "\n"),
			Remedy: diagnosis.Remedy, Fix: diagnosis.Fix}
	}
	return featuresVerdict(path, features)
}

// helpText is what `bwrap --help` prints, bounded in time and size.
func helpText(ctx context.Context, path string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var out limitedBuffer
	cmd := exec.CommandContext(ctx, path, "--help")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	_ = cmd.Run()
	return out.String()
}

// featuresVerdict decides over the options --help lists.
func featuresVerdict(path string, features sandbox.Features) Check {
	detail := fmt.Sprintf("--help lists %d options", len(features.Options))
	install := &Fix{Kind: FixInstall, Bwrap: path, Commands: []string{"bwrapkit install"}}
	missing := features.Missing()
	switch {
	case len(missing) == len(sandbox.Required()):
		return Check{Status: StatusFail, Summary: path + " does not behave like bwrap: its --help lists none of the options the boundary needs",
			Detail: detail, Remedy: installRemedy, Fix: install}
	case len(missing) > 0:
		return Check{Status: StatusFail, Summary: path + " lacks options the boundary needs: --" + strings.Join(missing, ", --"),
			Detail: detail, Remedy: installRemedy, Fix: install}
	case !features.Has("disable-userns"):
		return Check{Status: StatusWarn,
			Summary: "no --disable-userns (bubblewrap 0.8.0+): code inside can create nested user namespaces, a usual first step of kernel exploits",
			Detail:  detail, Remedy: installRemedy, Fix: install}
	}
	return Check{Status: StatusOK, Summary: "every option the boundary needs, and --disable-userns", Detail: detail}
}
