package platform

import (
	"errors"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

// Mount table lines for building proc views: the shapes of a Debian host and a Docker container.
const (
	hostRootLine  = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
	hostProcLine  = "24 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
	kcoreMaskLine = "40 24 0:56 /null /proc/kcore rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755\n"
)

func TestProcView(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		mountinfo string
		masks     []string
		visible   string // "" when none is
	}{
		{"plain host", hostRootLine + hostProcLine, nil, "/proc"},
		{"the kernel's empty directories hide nothing", hostRootLine + hostProcLine +
			"34 24 0:30 / /proc/sys/fs/binfmt_misc rw,relatime shared:13 - autofs systemd-1 rw,fd=30,pgrp=1,timeout=0,minproto=5,maxproto=5,direct\n" +
			"35 34 0:35 / /proc/sys/fs/binfmt_misc rw,relatime shared:33 - binfmt_misc binfmt_misc rw\n" +
			"36 24 0:34 / /proc/fs/nfsd rw,relatime - nfsd nfsd rw\n" +
			"37 24 0:36 / /proc/xen rw,relatime - xenfs xenfs rw\n" +
			"38 24 0:37 / /proc/openprom rw,relatime - openpromfs openpromfs rw\n", nil, "/proc"},
		{"whatever is mounted on an empty directory, it stays empty underneath", hostRootLine + hostProcLine +
			"36 24 0:60 / /proc/fs/nfsd rw,relatime - tmpfs tmpfs rw\n", nil, "/proc"},
		{"a /dev/null bind over kcore hides it", hostRootLine + hostProcLine + kcoreMaskLine, []string{"/proc/kcore"}, ""},
		{"a read-only self-bind counts, though it hides no content", hostRootLine + hostProcLine +
			"41 24 0:22 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw\n", []string{"/proc/sys"}, ""},
		{"binfmt_misc under a /proc/sys bind is still the kernel's empty directory", hostRootLine + hostProcLine +
			"41 24 0:22 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw\n" +
			"42 41 0:35 / /proc/sys/fs/binfmt_misc rw,relatime - binfmt_misc binfmt_misc rw\n", []string{"/proc/sys"}, ""},
		{"a deeper mount counts only through the cover above it", hostRootLine + hostProcLine +
			"43 24 0:61 / /proc/acpi ro,relatime - tmpfs tmpfs ro\n" +
			"44 43 0:62 / /proc/acpi/inner ro,relatime - tmpfs tmpfs ro\n", []string{"/proc/acpi"}, ""},
		{"read-only proc cannot back a read-write mount", hostRootLine +
			"24 22 0:22 / /proc ro,nosuid,nodev,noexec,relatime - proc proc rw\n", nil, ""},
		{"read-only in the super block", hostRootLine +
			"24 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime - proc proc ro\n", nil, ""},
		{"other atime flags than the new mount's", hostRootLine +
			"24 22 0:22 / /proc rw,nosuid,nodev,noexec,noatime - proc proc rw\n", nil, ""},
		{"strictatime (no atime option shown)", hostRootLine +
			"24 22 0:22 / /proc rw,nosuid,nodev,noexec - proc proc rw\n", nil, ""},
		{"subset=pid shows only the processes", hostRootLine +
			"24 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw,subset=pid\n", nil, ""},
		{"LXD nesting: a clean second proc", hostRootLine + hostProcLine +
			"31 24 0:50 /proc/cpuinfo /proc/cpuinfo rw,nosuid,nodev,relatime - fuse.lxcfs lxcfs rw,user_id=0,group_id=0,allow_other\n" +
			"50 45 0:128 / /dev/.lxc/proc rw,relatime shared:620 - proc proc rw\n", []string{"/proc/cpuinfo"}, "/dev/.lxc/proc"},
		{"a proc subdirectory mounted elsewhere is not a whole proc", hostRootLine + hostProcLine + kcoreMaskLine +
			"51 22 0:22 /sys /srv/sys rw,relatime - proc proc rw\n", []string{"/proc/kcore"}, ""},
		{"a sibling whose name starts like /proc is no cover", hostRootLine + hostProcLine +
			"52 24 0:63 / /procfs-backup rw,relatime - tmpfs tmpfs rw\n", nil, "/proc"},
		{"the topmost proc at /proc decides the masks", hostRootLine + hostProcLine + kcoreMaskLine +
			"60 24 0:70 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n", nil, "/proc"},
		{"escaped mount points", hostRootLine +
			"24 22 0:22 / /mnt/my\\040proc rw,relatime - proc proc rw\n" +
			"25 24 0:23 / /mnt/my\\040proc/kcore rw - tmpfs tmpfs rw\n", nil, ""},
	}
	for _, test := range tests {
		mounts, malformed := parseMountinfo(test.mountinfo)
		if malformed != 0 {
			t.Errorf("%s: %d malformed lines", test.name, malformed)
		}
		view := procView(mounts, "6.1.0-18-amd64")
		if masks := view.Masks(); !slices.Equal(masks, test.masks) {
			t.Errorf("%s: Masks = %q, want %q", test.name, masks, test.masks)
		}
		if visible, ok := view.VisibleProc(); visible != test.visible || ok != (test.visible != "") {
			t.Errorf("%s: VisibleProc = %q, %v, want %q", test.name, visible, ok, test.visible)
		}
	}
}

// TestProcViewOnKernelsBeforeTheEmptyDirectoryRule: before Linux 4.2 the kernel's fresh
// proc rule counted a mount on its empty directories like any other, so systemd's
// binfmt_misc automount alone blocked a user namespace's proc.
func TestProcViewOnKernelsBeforeTheEmptyDirectoryRule(t *testing.T) {
	t.Parallel()
	binfmt := hostRootLine + hostProcLine +
		"34 24 0:30 / /proc/sys/fs/binfmt_misc rw,relatime shared:13 - autofs systemd-1 rw,fd=30,pgrp=1,timeout=0,minproto=5,maxproto=5,direct\n"
	mounts, _ := parseMountinfo(binfmt)
	for _, test := range []struct {
		release string
		masks   []string
		visible string
	}{
		{"4.1.52", []string{"/proc/sys/fs/binfmt_misc"}, ""},
		{"3.10.0-1160.el7.x86_64", []string{"/proc/sys/fs/binfmt_misc"}, ""},
		{"4.2.0", nil, "/proc"},
		{"6.18.44-fc-v1045", nil, "/proc"},
		{"", nil, "/proc"}, // unread: taken as a current kernel
	} {
		view := procView(mounts, test.release)
		if masks := view.Masks(); !slices.Equal(masks, test.masks) {
			t.Errorf("Linux %q: Masks = %q, want %q", test.release, masks, test.masks)
		}
		if visible, _ := view.VisibleProc(); visible != test.visible {
			t.Errorf("Linux %q: VisibleProc = %q, want %q", test.release, visible, test.visible)
		}
	}
}

func TestParseMountLine(t *testing.T) {
	t.Parallel()
	line := `36 35 98:0 /mnt1 /mnt\0402 rw,noatime master:1 shared:7 - ext3 /dev/root rw,errors=continue`
	got, ok := parseMountLine(line)
	want := mount{id: 36, parent: 35, root: "/mnt1", point: "/mnt 2", options: "rw,noatime", fsType: "ext3",
		source: "/dev/root", superOptions: "rw,errors=continue"}
	if !ok || got != want {
		t.Errorf("parseMountLine = %+v, %v, want %+v", got, ok, want)
	}
	for _, bad := range []string{"", "36 35 98:0 / / rw", "x 35 98:0 / / rw - ext4 /dev/sda rw", "36 35 98:0 rel / rw - ext4 /dev/sda rw",
		"36 35 98:0 / / rw master:1 -"} {
		if entry, ok := parseMountLine(bad); ok {
			t.Errorf("parseMountLine(%q) = %+v, want malformed", bad, entry)
		}
	}
}

func TestConfinement(t *testing.T) {
	t.Parallel()
	label := func(text string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(text)} }
	tests := []struct {
		name       string
		files      fstest.MapFS
		selinux    bool
		want       string
		unconfined bool
		problems   int
	}{
		{"docker-default", fstest.MapFS{pathAttrAppArmor: label("docker-default (enforce)\n")}, false, "docker-default (enforce)", false, 0},
		{"unconfined", fstest.MapFS{pathAttrAppArmor: label("unconfined\n")}, false, "unconfined", true, 0},
		{"a stacked LXD label", fstest.MapFS{pathAttrAppArmor: label("lxd-c1_</var/snap/lxd/common/lxd>//&:lxd-c1_<var-snap-lxd-common-lxd>:unconfined (enforce)\n")},
			false, "lxd-c1_</var/snap/lxd/common/lxd>//&:lxd-c1_<var-snap-lxd-common-lxd>:unconfined (enforce)", false, 0},
		{"complain mode, NUL-terminated", fstest.MapFS{pathAttrAppArmor: label("bwrap (complain)\x00")}, false, "bwrap (complain)", false, 0},
		{"an unconfined-mode profile", fstest.MapFS{pathAttrAppArmor: label("bwrap (unconfined)\n")}, false, "bwrap (unconfined)", true, 0},
		{"pre-5.8 kernels: attr/current", fstest.MapFS{pathAttrCurrent: label("snap.codex.codex (enforce)\n")}, false,
			"snap.codex.codex (enforce)", false, 0},
		{"attr/current belongs to SELinux when SELinux is on", fstest.MapFS{pathAttrCurrent: label("system_u:system_r:container_t:s0:c12,c34\x00"),
			"sys/fs/selinux/enforce": label("1\n")}, true, "unknown", false, 0},
		{"empty", fstest.MapFS{pathAttrAppArmor: label("")}, false, "unknown (/proc/self/attr/apparmor/current: empty)", false, 0},
		{"two lines is not a label", fstest.MapFS{pathAttrAppArmor: label("a\nb\n")}, false, "unknown (/proc/self/attr/apparmor/current: empty)", false, 0},
		{"a FIFO", fstest.MapFS{pathAttrAppArmor: {Mode: fs.ModeNamedPipe | 0o444}}, false,
			"unknown (/proc/self/attr/apparmor/current: not a regular file (p---------))", false, 1},
		{"huge", fstest.MapFS{pathAttrAppArmor: {Data: make([]byte, maxFileSize+1)}}, false,
			"unknown (/proc/self/attr/apparmor/current: larger than 65536 bytes)", false, 1},
	}
	for _, test := range tests {
		root := debianRoot()
		for name, file := range test.files {
			root[name] = file
		}
		host := Detect(root, nil, "linux", "amd64")
		if got := host.AppArmorLabel.String(); got != test.want || host.AppArmorLabel.Unconfined() != test.unconfined {
			t.Errorf("%s: label %q (unconfined %v), want %q (%v)", test.name, got, host.AppArmorLabel.Unconfined(), test.want, test.unconfined)
		}
		if len(host.Problems) != test.problems {
			t.Errorf("%s: Problems = %q, want %d", test.name, host.Problems, test.problems)
		}
	}
}

func TestSeccompState(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status string
		want   SeccompState
	}{
		{"Seccomp:\t2\nSeccomp_filters:\t3\n", SeccompState{Known: true, Mode: 2, Filters: 3}},
		{"Seccomp:\t0\n", SeccompState{Known: true, Filters: -1}},
		{"Name:\tsh\n", SeccompState{Filters: -1, Err: "no Seccomp line (kernel without CONFIG_SECCOMP)"}},
		{"Seccomp:\tfilter\n", SeccompState{Filters: -1, Err: `Seccomp: want 0, 1 or 2, got "filter"`}},
		{"Seccomp:\t2\nSeccomp_filters:\t-4\n", SeccompState{Known: true, Mode: 2, Filters: -1, Err: `Seccomp_filters: not a count: "-4"`}},
	}
	for _, test := range tests {
		if got := seccompState(parseStatus(test.status)); got != test.want {
			t.Errorf("%q: %+v, want %+v", test.status, got, test.want)
		}
	}
}

func TestUsernsBuild(t *testing.T) {
	t.Parallel()
	nsEntry := &fstest.MapFile{Mode: fs.ModeSymlink | 0o777}
	tests := []struct {
		name  string
		files fstest.MapFS
		want  string
	}{
		{"user among the namespaces", fstest.MapFS{"proc/self/ns/user": nsEntry, "proc/self/ns/mnt": nsEntry}, UsernsBuiltIn},
		{"no user among them", fstest.MapFS{"proc/self/ns/mnt": nsEntry, "proc/self/ns/net": nsEntry}, UsernsNotBuilt},
		{"no ns directory: the build config says y", fstest.MapFS{"boot/config-6.1.0-28-amd64": {Data: []byte("CONFIG_NAMESPACES=y\nCONFIG_USER_NS=y\n")}}, UsernsBuiltIn},
		{"no ns directory: the build config says not set", fstest.MapFS{"boot/config-6.1.0-28-amd64": {Data: []byte("# CONFIG_USER_NS is not set\n")}}, UsernsNotBuilt},
		{"no ns directory, no config", nil, ""},
		{"a config that does not say", fstest.MapFS{"boot/config-6.1.0-28-amd64": {Data: []byte("CONFIG_NAMESPACES=y\n")}}, ""},
	}
	for _, test := range tests {
		root := debianRoot()
		for name, file := range test.files {
			root[name] = file
		}
		host := Detect(root, nil, "linux", "amd64")
		if host.UsernsBuild.State != test.want || host.UsernsBuild.Evidence == "" {
			t.Errorf("%s: UsernsBuild = %+v, want state %q with evidence", test.name, host.UsernsBuild, test.want)
		}
		if _, blocked := host.UserNamespacesBlocked(); blocked != (test.want == UsernsNotBuilt) {
			t.Errorf("%s: UserNamespacesBlocked = %v", test.name, blocked)
		}
	}
}

// failFS answers every path in errs with that error, as a real /proc does for a file this
// process may not read (PID 1's environ as non-root) or that no LSM provides (EINVAL).
type failFS struct {
	fs.FS
	errs map[string]error
}

func (f failFS) Open(name string) (fs.File, error) {
	if err, ok := f.errs[name]; ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return f.FS.Open(name)
}

// TestDetectBadFiles gives every file a new fact rests on the worst shapes it can have: the
// fact must come out unknown, with why, and Detect must neither block nor panic.
func TestDetectBadFiles(t *testing.T) {
	t.Parallel()
	paths := []string{pathMountinfo, pathAttrAppArmor, pathStatus, pathInitEnviron, pathContainerManager,
		pathSystemdContainer, pathVersion, "sys/class/dmi/id/board_name", "proc/1/cgroup"}
	shapes := map[string]*fstest.MapFile{
		"empty":     {Data: nil},
		"huge":      {Data: []byte(strings.Repeat("container=lxc\x00", maxTableSize/8))},
		"fifo":      {Mode: fs.ModeNamedPipe | 0o644},
		"directory": {Mode: fs.ModeDir | 0o555},
		"device":    {Mode: fs.ModeDevice | fs.ModeCharDevice | 0o644},
		"garbage":   {Data: []byte("\x00\xff\n - - - \n\\\\\\\n")},
	}
	for _, path := range paths {
		for shape, file := range shapes {
			root := debianRoot()
			root[pathMountinfo] = &fstest.MapFile{Data: []byte(hostRootLine + hostProcLine)}
			root[pathAttrAppArmor] = &fstest.MapFile{Data: []byte("unconfined\n")}
			root[path] = file
			host := Detect(root, nil, "linux", "amd64")
			if host.Runtime != "" {
				t.Errorf("%s %s: Runtime = %q from a bad file", path, shape, host.Runtime)
			}
			switch {
			case path == pathMountinfo && shape != "garbage" && (host.Proc.Known || host.Proc.Err == ""):
				t.Errorf("%s %s: Proc = %+v, want unknown with a reason", path, shape, host.Proc)
			case path == pathMountinfo && shape == "garbage" && (host.Proc.Known || len(host.Proc.Mounts) != 0):
				t.Errorf("%s %s: Proc = %+v, want unknown", path, shape, host.Proc)
			case path == pathAttrAppArmor && (host.AppArmorLabel.Known || host.AppArmorLabel.Err == ""):
				t.Errorf("%s %s: AppArmorLabel = %+v, want unknown with a reason", path, shape, host.AppArmorLabel)
			case path == pathStatus && shape != "garbage" && (host.SeccompState.Known || host.SeccompState.Err == ""):
				t.Errorf("%s %s: SeccompState = %+v, want unknown with a reason", path, shape, host.SeccompState)
			}
			naming := 0
			for _, problem := range host.Problems {
				if strings.HasPrefix(problem, "/"+path+": ") {
					naming++
				}
			}
			if shape != "empty" && shape != "garbage" && naming != 1 {
				t.Errorf("%s %s: Problems = %q, want exactly one naming the file", path, shape, host.Problems)
			}
		}
	}
	// What a real /proc answers for an ordinary reason is unknown, but no problem.
	root := failFS{FS: debianRoot(), errs: map[string]error{pathInitEnviron: syscall.EACCES, pathAttrCurrent: syscall.EINVAL,
		pathMountinfo: syscall.EACCES}}
	base := debianRoot()
	base[pathAttrCurrent] = &fstest.MapFile{Data: []byte("x")}
	base[pathInitEnviron] = &fstest.MapFile{Data: []byte("container=lxc\x00")}
	base[pathMountinfo] = &fstest.MapFile{Data: []byte(hostRootLine)}
	root.FS = base
	host := Detect(root, nil, "linux", "amd64")
	if len(host.Problems) != 0 || host.Runtime != "" || host.AppArmorLabel.Known || host.Proc.Known || host.Proc.Err != "permission denied" {
		t.Errorf("permission and EINVAL: Problems %q, Runtime %q, label %+v, proc %+v", host.Problems, host.Runtime, host.AppArmorLabel, host.Proc)
	}
}

// regularLiar reports every file as regular, as a tree whose file is swapped for a FIFO
// between the check and the open would.
type regularLiar struct{ fs.FS }

type regularInfo struct{ fs.FileInfo }

func (regularInfo) Mode() fs.FileMode { return 0o644 }

func (l regularLiar) Stat(name string) (fs.FileInfo, error) {
	info, err := fs.Stat(l.FS, name)
	if err != nil {
		return nil, err
	}
	return regularInfo{info}, nil
}

// TestHostRootFIFO plants a real FIFO with no writer, where opening it for reading without
// O_NONBLOCK would block forever, behind a stat that lies: HostRoot's open returns at once
// and the check on the open file refuses it.
func TestHostRootFIFO(t *testing.T) {
	t.Parallel()
	fifo := t.TempDir() + "/mountinfo"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := readBounded(regularLiar{HostRoot()}, strings.TrimPrefix(fifo, "/"), maxFileSize)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file once opened") {
			t.Errorf("read of a FIFO = %v, want refused once opened", err)
		}
	case <-time.After(30 * time.Second):
		// A bound, not a timing assertion: without O_NONBLOCK the open never returns.
		t.Fatal("opening a FIFO through HostRoot blocked")
	}
	if _, err := readBounded(HostRoot(), strings.TrimPrefix(fifo, "/"), maxFileSize); err == nil ||
		!strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("HostRoot read of a FIFO = %v", err)
	}
	if _, err := HostRoot().Open("../etc/passwd"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("HostRoot accepts an invalid path: %v", err)
	}
}

// TestHostRootMatchesDirFS: the live host reads the same through HostRoot as through os.DirFS.
func TestHostRootMatchesDirFS(t *testing.T) {
	t.Parallel()
	got := Detect(HostRoot(), nil, "linux", "amd64")
	if !got.Proc.Known || !got.SeccompState.Known || got.Kernel == "" {
		t.Errorf("Detect(HostRoot()) = %+v", got)
	}
	again := Detect(HostRoot(), nil, "linux", "amd64")
	again.Tracer, got.Tracer = Tracer{}, Tracer{}
	if !reflect.DeepEqual(got.Proc.Masks(), again.Proc.Masks()) || got.Runtime != again.Runtime {
		t.Errorf("two reads of the same host differ: %+v vs %+v", got, again)
	}
}

// BenchmarkDetect measures one whole detection: the doctor runs it once per invocation.
func BenchmarkDetect(b *testing.B) {
	for name, root := range map[string]fs.FS{"fixture-docker-ubuntu2404": os.DirFS(fixtures + "/docker-ubuntu2404"), "live-host": HostRoot()} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				Detect(root, nil, "linux", "amd64")
			}
		})
	}
}
