package diagnose

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/bwrapkit/bwrapkit/doctor/remedy"
	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/platform"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

func stderrFixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(livetest.RepoRoot(), "testdata", "bwrap", "stderr", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func knob(value int64) platform.Knob {
	return platform.Knob{Present: true, Value: value, Raw: strconv.FormatInt(value, 10)}
}

// linuxHost is an ordinary Linux host where nothing blocks user namespaces.
func linuxHost() platform.Host {
	return platform.Host{OS: "linux", Arch: "amd64", Kind: platform.KindLinux, Kernel: "6.1.0-18-amd64",
		UnprivilegedUsernsClone: knob(1), MaxUserNamespaces: platform.Knob{Present: true, Value: 63439, Raw: "63439"},
		InitialUserNamespace: true}
}

func TestDiagnose(t *testing.T) {
	const bwrap = "/usr/bin/bwrap"
	setup := sandbox.ReasonSetupFailed
	type tweak func(*Facts)
	withHost := func(change func(*platform.Host)) tweak { return func(f *Facts) { change(&f.Host) } }
	cloneOff := withHost(func(h *platform.Host) { h.UnprivilegedUsernsClone = knob(0) })
	nestedNS := withHost(func(h *platform.Host) { h.InitialUserNamespace = false })
	docker := withHost(func(h *platform.Host) { h.Container, h.Seccomp = platform.ContainerDocker, 2 })
	restricted := withHost(func(h *platform.Host) { h.AppArmorEnabled, h.AppArmorRestrictUserns = true, knob(1) })
	errno := func(e syscall.Errno) tweak { return func(f *Facts) { f.UsernsErr = e } }
	root := func(f *Facts) { f.Root = true }

	tests := []struct {
		name   string
		stderr string // fixture name; "" for none
		reason sandbox.Reason
		tweaks []tweak
		cause  Cause
		remedy []string // substrings the remedy must hold
	}{
		// kernel.unprivileged_userns_clone = 0: each version's wording, decided by the knob.
		{"debian knob off", "debian-0.8.0-userns-eperm", setup, []tweak{cloneOff, errno(syscall.EPERM)}, CauseUnprivilegedClone,
			[]string{"sudo sysctl -w kernel.unprivileged_userns_clone=1", "/etc/sysctl.d/90-bwrapkit-userns.conf"}},
		{"0.12.0 knob off", "static-0.12.0-userns-eperm", setup, []tweak{cloneOff}, CauseUnprivilegedClone, []string{"kernel.unprivileged_userns_clone=1"}},
		{"codex knob off", "codex-userns-eperm", setup, []tweak{cloneOff}, CauseUnprivilegedClone, []string{"kernel.unprivileged_userns_clone=1"}},
		{"old wording knob off", "reference-old-userns-eperm", setup, []tweak{cloneOff}, CauseUnprivilegedClone, []string{"kernel.unprivileged_userns_clone=1"}},
		{"knob off as root: no sudo", "debian-0.8.0-userns-eperm", setup, []tweak{cloneOff, root}, CauseUnprivilegedClone, []string{"\nsysctl -w kernel.unprivileged_userns_clone=1"}},
		// The same "No permissions" text, but the facts point elsewhere.
		{"docker seccomp behind a misleading text", "debian-0.8.0-userns-eperm", setup, []tweak{docker, errno(syscall.EPERM)}, CauseContainer,
			[]string{"--security-opt seccomp=unconfined --security-opt apparmor=unconfined"}},
		{"docker as root", "reference-container-eperm", setup, []tweak{docker, root}, CauseContainer, []string{"seccomp=unconfined"}},
		{"seccomp outside a container", "static-0.12.0-userns-eperm", setup, []tweak{withHost(func(h *platform.Host) { h.Seccomp = 2 }), errno(syscall.EPERM)}, CauseSeccomp, []string{"RestrictNamespaces="}},
		{"chroot: EPERM no knob explains", "debian-0.8.0-userns-eperm", setup, []tweak{errno(syscall.EPERM)}, CauseUsernsDenied, []string{"chroot"}},
		{"EPERM text alone", "codex-userns-eperm", setup, nil, CauseUsernsDenied, []string{"chroot"}},
		// ENOSPC: nested inside a sandbox, or the limit.
		{"debian nested", "debian-0.8.0-nested-enospc", setup, []tweak{nestedNS, errno(syscall.ENOSPC)}, CauseNested, []string{"outside the enclosing sandbox"}},
		{"0.12.0 nested", "static-0.12.0-nested-enospc", setup, []tweak{nestedNS, errno(syscall.ENOSPC)}, CauseNested, []string{"outside"}},
		{"codex nested, text only", "codex-nested-enospc", setup, []tweak{nestedNS}, CauseNested, []string{"outside"}},
		{"limit 0", "debian-0.8.0-nested-enospc", setup, []tweak{withHost(func(h *platform.Host) { h.MaxUserNamespaces = knob(0) })}, CauseUsernsLimit,
			[]string{"sudo sysctl -w user.max_user_namespaces=15000", "/etc/sysctl.d/"}},
		{"limit reached in the initial namespace", "static-0.12.0-nested-enospc", setup, []tweak{errno(syscall.ENOSPC)}, CauseUsernsLimit, []string{"user.max_user_namespaces"}},
		// No user namespaces in the kernel.
		{"disabled at boot", "reference-no-userns-einval", setup, []tweak{withHost(func(h *platform.Host) { h.UsernsModuleEnable = knob(0) })}, CauseUsernsOff, []string{"user_namespace.enable=1"}},
		{"EINVAL", "reference-no-userns-einval", setup, []tweak{errno(syscall.EINVAL)}, CauseUsernsOff, []string{"user_namespace.enable=1"}},
		{"no support, text only", "reference-no-userns-einval", setup, nil, CauseUsernsOff, []string{"reboot"}},
		// Ubuntu's AppArmor restriction: the profile is for this exact path.
		{"apparmor uid map", "reference-apparmor-uid-map", setup, []tweak{restricted}, CauseAppArmor, []string{
			"'profile bwrapkit-usr.bin.bwrap /usr/bin/bwrap flags=(unconfined) {' '  userns,'",
			"| sudo tee /etc/apparmor.d/bwrapkit-usr.bin.bwrap >/dev/null",
			"sudo apparmor_parser -r /etc/apparmor.d/bwrapkit-usr.bin.bwrap", "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"}},
		{"apparmor loopback", "reference-apparmor-loopback", setup, []tweak{restricted}, CauseAppArmor, []string{"apparmor_parser -r"}},
		{"apparmor text only", "reference-apparmor-uid-map", setup, nil, CauseAppArmor, []string{"userns,"}},
		// A masked /proc.
		{"debian proc masked", "debian-0.8.0-proc-masked", setup, []tweak{func(f *Facts) { f.ProcMasks = []string{"/proc/acpi"} }}, CauseProcMasked, []string{"--security-opt unmask=ALL"}},
		{"0.12.0 proc masked", "static-0.12.0-proc-masked", setup, []tweak{func(f *Facts) { f.ProcMasks = []string{"/proc/kcore"} }}, CauseProcMasked, []string{"unmask=ALL"}},
		{"codex proc masked, text only", "codex-proc-masked", setup, nil, CauseProcMasked, []string{"unmask=ALL"}},
		// Setuid.
		{"0.12.0 setuid", "static-0.12.0-setuid", setup, []tweak{func(f *Facts) { f.Setuid = true }}, CauseSetuidUnsupported, []string{"sudo chmod u-s /usr/bin/bwrap"}},
		{"codex setuid refuses even --help", "codex-setuid", sandbox.ReasonUnsupported, []tweak{func(f *Facts) { f.Setuid, f.Missing = true, sandbox.Required() }}, CauseSetuidUnsupported, []string{"chmod u-s"}},
		// Not bwrap, or none.
		{"impostor", "impostor-true", sandbox.ReasonNoLaunchProof, nil, CauseNotBwrap, []string{"bwrapkit install"}},
		{"impostor by --help", "impostor-true", sandbox.ReasonUnsupported, []tweak{func(f *Facts) { f.Missing = sandbox.Required() }}, CauseNotBwrap, []string{"bwrapkit install"}},
		{"too old", "", sandbox.ReasonUnsupported, []tweak{func(f *Facts) { f.Missing = []string{"json-status-fd"} }}, CauseMissingOptions, []string{"bwrapkit install"}},
		{"not found", "", sandbox.ReasonNotFound, nil, CauseNoBwrap, []string{"bwrapkit install"}},
		{"hang", "", sandbox.ReasonLaunchTimeout, nil, CauseLaunchTimeout, []string{"stuck mount"}},
		{"something new", "", setup, []tweak{func(f *Facts) { f.Stderr = "bwrap: Something new: Bad address\n" }}, CauseUnknown, []string{"bwrap's message"}},
		// Other platforms.
		{"wsl1", "", sandbox.ReasonSetupFailed, []tweak{withHost(func(h *platform.Host) { h.Kind, h.Kernel = platform.KindWSL1, "4.4.0-19041-Microsoft" }), func(f *Facts) { f.Distro = "Debian" }},
			CauseWSL1, []string{"wsl --set-version Debian 2"}},
		{"darwin", "", sandbox.ReasonNotFound, []tweak{withHost(func(h *platform.Host) { h.OS, h.Kind = "darwin", platform.KindDarwin })}, CauseUnsupportedOS, []string{"Linux"}},
		{"windows", "", sandbox.ReasonNotFound, []tweak{withHost(func(h *platform.Host) { h.OS, h.Kind = "windows", platform.KindWindows })}, CauseUnsupportedOS, []string{"WSL2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			facts := Facts{Host: linuxHost(), Bwrap: bwrap, Reason: tc.reason}
			if tc.stderr != "" {
				facts.Stderr = stderrFixture(t, tc.stderr)
			}
			for _, change := range tc.tweaks {
				change(&facts)
			}
			diagnosis := Diagnose(facts)
			if diagnosis.Cause != tc.cause {
				t.Fatalf("cause %s, want %s (%s)", diagnosis.Cause, tc.cause, diagnosis.Summary)
			}
			if diagnosis.Summary == "" || diagnosis.Remedy == "" {
				t.Errorf("empty summary or remedy: %+v", diagnosis)
			}
			for _, want := range tc.remedy {
				if !strings.Contains(diagnosis.Remedy, want) {
					t.Errorf("remedy lacks %q:\n%s", want, diagnosis.Remedy)
				}
			}
			if facts.Root && strings.Contains(diagnosis.Remedy, "sudo ") {
				t.Errorf("remedy for root says sudo:\n%s", diagnosis.Remedy)
			}
		})
	}
}

// TestAppArmorRemedyIsTheFixedProfile: the remedy printed for the AppArmor cause writes
// exactly the profile `doctor --fix` would, so following either leaves the same file.
func TestAppArmorRemedyIsTheFixedProfile(t *testing.T) {
	for _, path := range []string{"/usr/bin/bwrap", "/usr/local/lib/bwrapkit/versions/253c70372599ac19/bwrap", "/opt/my tools/bwrap"} {
		profile, err := remedy.NewAppArmorProfile(path)
		if err != nil {
			t.Fatal(err)
		}
		diagnosis := AppArmor(Facts{Bwrap: path})
		if diagnosis.Fix == nil || diagnosis.Fix.File != profile.File || diagnosis.Fix.Content != profile.Content {
			t.Errorf("%s: fix %+v, want the profile %s", path, diagnosis.Fix, profile.File)
		}
		if !strings.Contains(diagnosis.Remedy, "apparmor_parser -r "+profile.File) || !strings.Contains(diagnosis.Remedy, "tee "+profile.File) {
			t.Errorf("%s: remedy does not write and load %s:\n%s", path, profile.File, diagnosis.Remedy)
		}
	}
	// A path AppArmor could only match as a pattern gets advice, never a wider grant.
	if diagnosis := AppArmor(Facts{Bwrap: "/opt/b*/bwrap"}); diagnosis.Fix == nil || diagnosis.Fix.File != "" || diagnosis.Remedy == "" {
		t.Errorf("glob path: %+v", diagnosis)
	}
}

func TestProcMasks(t *testing.T) {
	mountinfo := `22 27 0:21 / /proc rw,relatime - proc proc rw
23 22 0:40 / /proc/sys/fs/binfmt_misc rw,relatime - binfmt_misc binfmt_misc rw
24 22 0:41 / /proc/acpi ro,relatime - tmpfs tmpfs ro
25 22 0:5 /null /proc/kcore rw,nosuid - devtmpfs udev rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
`
	if got := strings.Join(ProcMasks(mountinfo), " "); got != "/proc/acpi /proc/kcore" {
		t.Errorf("ProcMasks = %q", got)
	}
	if got := ProcMasks("22 27 0:21 / /proc rw - proc proc rw\n"); len(got) != 0 {
		t.Errorf("plain host: %v", got)
	}
}

// TestSysctlRemedyWritesWhatFixOwns: the printed sysctl remedy, run by a shell, writes the
// drop-in --fix writes, with its mark, so a later --fix merges into it instead of refusing.
func TestSysctlRemedyWritesWhatFixOwns(t *testing.T) {
	for _, tc := range []struct {
		diagnosis Diagnosis
		setting   remedy.SysctlSetting
	}{
		{usernsLimit(Facts{Bwrap: "/usr/bin/bwrap"}, "test"), remedy.SysctlSetting{Key: "user.max_user_namespaces", Value: "15000"}},
		{unprivilegedClone(Facts{Bwrap: "/usr/bin/bwrap", Root: true}, "test"), remedy.SysctlSetting{Key: "kernel.unprivileged_userns_clone", Value: "1"}},
	} {
		fix := tc.diagnosis.Fix
		if fix == nil || fix.File != remedy.SysctlFile {
			t.Fatalf("%s: fix %+v, want one writing %s", tc.diagnosis.Cause, fix, remedy.SysctlFile)
		}
		var printed string
		for _, command := range fix.Commands {
			if !strings.Contains(tc.diagnosis.Remedy, command) {
				t.Errorf("%s: the remedy text lacks the fix's command %q", tc.diagnosis.Cause, command)
			}
			if writer, target, ok := strings.Cut(command, " | "); ok {
				if !strings.Contains(target, "tee "+remedy.SysctlFile) {
					t.Errorf("%s: %q writes elsewhere", tc.diagnosis.Cause, command)
				}
				out, err := exec.Command("/bin/sh", "-c", writer).Output()
				if err != nil {
					t.Fatal(err)
				}
				printed = string(out)
			}
		}
		if printed != fix.Content {
			t.Errorf("%s: the printed command writes\n%s\nbut the fix's content is\n%s", tc.diagnosis.Cause, printed, fix.Content)
		}
		if _, err := remedy.SysctlDropIn(remedy.SysctlFile, printed, []remedy.SysctlSetting{tc.setting}); err != nil {
			t.Errorf("%s: --fix refuses the file the printed remedy writes: %v", tc.diagnosis.Cause, err)
		}
	}
}
