package selftest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/bwrapkit/bwrapkit/doctor/probe"
	"github.com/bwrapkit/bwrapkit/doctor/report"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// sysctlCandidates are sysctls whose own value can be written back without effect, the
// first this kernel has being the one tried. Never kernel.core_pattern or anything that
// acts on a write of the same value.
func sysctlCandidates() []string {
	return []string{"/proc/sys/vm/stat_interval", "/proc/sys/vm/dirty_expire_centisecs", "/proc/sys/kernel/printk_ratelimit"}
}

// procMustClose are the /proc paths the sandbox must close, written out here and not
// taken from the sandbox's own list (policy.Host.Proc): a path dropped there is then a
// path with no mount of its own here, not a shorter list that still passes. They are
// runc's and Docker's read-only and masked paths (runc's libcontainer/specconv defaults,
// moby's daemon/pkg/oci/defaults.go), and the root-only files that check no capability,
// which a root caller's command would otherwise read (docs/kernel-surface.md).
func procMustClose() (readOnly, masked []string) {
	readOnly = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
	masked = []string{"/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/sched_debug", "/proc/scsi", "/proc/timer_list", "/proc/timer_stats",
		"/proc/kpageflags", "/proc/kpagecount", "/proc/kpagecgroup", "/proc/slabinfo", "/proc/pagetypeinfo",
		"/proc/vmallocinfo"}
	return readOnly, masked
}

// expectedProcSurface is procMustClose as this kernel's /proc has it (lstat is the
// host's): a path the kernel lacks cannot be shown inside either.
func expectedProcSurface(lstat func(string) (fs.FileInfo, error)) sandbox.ProcSurface {
	readOnly, masked := procMustClose()
	var surface sandbox.ProcSurface
	for _, path := range readOnly {
		if _, err := lstat(path); err == nil {
			surface.ReadOnly = append(surface.ReadOnly, path)
		}
	}
	for _, path := range masked {
		info, err := lstat(path)
		switch {
		case err != nil:
		case info.IsDir():
			surface.MaskDirs = append(surface.MaskDirs, path)
		default:
			surface.MaskFiles = append(surface.MaskFiles, path)
		}
	}
	return surface
}

// ProcSysReadonly is the self-test of its name; see doctor/README.md for why it can fail and
// pass. What must be closed is procMustClose on this kernel, whatever the sandbox's list says.
func ProcSysReadonly(_ *Env, _ sandbox.Policy, request *probe.Request) (Part, error) {
	surface := expectedProcSurface(os.Lstat)
	sysctl := ""
	for _, candidate := range sysctlCandidates() {
		if _, err := os.Stat(candidate); err == nil {
			sysctl = candidate
			break
		}
	}
	before := readValue(sysctl)
	request.Proc = &probe.ProcSurfaceRequest{Sysctl: sysctl, ReadOnly: surface.ReadOnly, MaskFiles: surface.MaskFiles, MaskDirs: surface.MaskDirs}
	return Part{Judge: func(_ context.Context, launched Launched) report.Check {
		if launched.Observation.Proc == nil {
			return missing("look at /proc's kernel surface")
		}
		return procSysVerdict(*launched.Observation.Proc, surface, before, readValue(sysctl))
	}}, nil
}

func readValue(path string) string {
	if path == "" {
		return ""
	}
	value, err := os.ReadFile(path)
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return strings.TrimSpace(string(value))
}

// procSysVerdict: the sysctl write was refused and the host's value is unchanged; every
// read-only path is a read-only mount inside (as any uid: a refusal by file permissions
// alone would hold for a user and not for root); every masked path shows nothing.
func procSysVerdict(observed probe.ProcSurfaceObservation, surface sandbox.ProcSurface, hostBefore, hostAfter string) report.Check {
	var breaches, detail []string
	if observed.Sysctl != "" {
		outcome := "refused: " + observed.OpenError
		if observed.OpenError == "" {
			outcome = "opened for writing; writing its own value back: " + orSucceeded(observed.WriteError)
			breaches = append(breaches, observed.Sysctl+" could be opened for writing")
		}
		detail = append(detail, fmt.Sprintf("write %s (value %s): %s; host value before %s, after %s", observed.Sysctl, observed.SysctlValue, outcome, hostBefore, hostAfter))
		if hostBefore != hostAfter {
			breaches = append(breaches, fmt.Sprintf("the host's %s changed from %s to %s", observed.Sysctl, hostBefore, hostAfter))
		}
	}
	for _, path := range surface.ReadOnly {
		options, mounted := observed.ReadOnlyMounts[path]
		detail = append(detail, fmt.Sprintf("%s: mount options %q", path, options))
		switch {
		case !mounted || options == "":
			breaches = append(breaches, path+" has no mount of its own inside")
		case !slices.Contains(strings.Split(options, ","), "ro"):
			breaches = append(breaches, path+" is mounted read-write inside ("+options+")")
		}
	}
	for _, path := range append(slices.Clone(surface.MaskFiles), surface.MaskDirs...) {
		shown := observed.Masked[path]
		detail = append(detail, fmt.Sprintf("%s: %s, mount options %q", path, orNothingShown(shown, observed.MaskedError[path]), observed.MaskMounts[path]))
		switch {
		case shown != "":
			breaches = append(breaches, path+" shows the host's "+strconv.Quote(truncate(shown, 40)))
		case observed.MaskMounts[path] == "":
			// Empty, but not masked: the host's file may be empty right now (an idle
			// latency_stats), and not the next time.
			breaches = append(breaches, path+" is not masked (no mount over it)")
		}
	}
	switch {
	case len(breaches) > 0:
		return breach("/proc's kernel surface is open inside: "+strings.Join(breaches, "; "), strings.Join(detail, "\n"))
	case observed.Error != "":
		return report.Check{Status: report.StatusFail, Summary: "the probe could not read its mount table: " + observed.Error, Detail: strings.Join(detail, "\n")}
	case len(surface.ReadOnly) == 0:
		return report.Check{Status: report.StatusFail, Summary: "the sandbox closes no read-only path of /proc on this kernel (no /proc/sys?)", Detail: strings.Join(detail, "\n")}
	}
	summary := fmt.Sprintf("%s read-only inside", strings.Join(surface.ReadOnly, ", "))
	if observed.Sysctl != "" {
		summary += fmt.Sprintf(" (a write to %s: %s, the host's value unchanged)", strings.TrimPrefix(observed.Sysctl, "/proc/sys/"), observed.OpenError)
	}
	return pass(fmt.Sprintf("%s; %d masked paths show nothing", summary, len(surface.MaskFiles)+len(surface.MaskDirs)), strings.Join(detail, "\n"))
}

func orNothingShown(shown, errText string) string {
	switch {
	case shown != "":
		return "shows " + strconv.Quote(truncate(shown, 40))
	case errText != "":
		return "unreadable (" + errText + ")"
	}
	return "empty"
}
