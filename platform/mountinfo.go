package platform

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/bwrapkit/bwrapkit/internal/kernel"
	"github.com/bwrapkit/bwrapkit/internal/mountinfo"
)

// mount is one line of /proc/self/mountinfo (proc(5)).
type mount struct {
	id, parent   int
	root         string // the path inside the file system that is mounted: "/" for the whole of it
	point        string // where it is mounted
	options      string // per-mount options: rw/ro, atime, nosuid...
	fsType       string
	source       string
	superOptions string
}

// parseMountinfo reads every well-formed line; the count of malformed ones says whether the
// text was mountinfo at all.
func parseMountinfo(text string) (mounts []mount, malformed int) {
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		entry, ok := parseMountLine(line)
		if !ok {
			malformed++
			continue
		}
		mounts = append(mounts, entry)
	}
	return mounts, malformed
}

// parseMountLine splits "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": a
// variable number of optional fields ends at the lone "-".
func parseMountLine(line string) (mount, bool) {
	fields := strings.Fields(line)
	separator := -1
	for i := 6; i < len(fields); i++ {
		if fields[i] == "-" {
			separator = i
			break
		}
	}
	if separator < 0 || len(fields) < separator+3 {
		return mount{}, false
	}
	id, errID := strconv.Atoi(fields[0])
	parent, errParent := strconv.Atoi(fields[1])
	if errID != nil || errParent != nil || !strings.HasPrefix(fields[3], "/") || !strings.HasPrefix(fields[4], "/") {
		return mount{}, false
	}
	entry := mount{id: id, parent: parent, root: mountinfo.Unescape(fields[3]), point: mountinfo.Unescape(fields[4]),
		options: fields[5], fsType: fields[separator+1], source: mountinfo.Unescape(fields[separator+2])}
	if len(fields) > separator+3 {
		entry.superOptions = fields[separator+3]
	}
	return entry, true
}

// hasOption reports whether a comma-separated option list holds name (exactly, or as
// name=value when name ends in '=').
func hasOption(options, name string) bool {
	for _, option := range strings.Split(options, ",") {
		if option == name || strings.HasSuffix(name, "=") && strings.HasPrefix(option, name) {
			return true
		}
	}
	return false
}

// ProcView is what the mount table says about proc file systems, the facts behind the
// kernel's rule for mounting a fresh proc in a user namespace (mnt_already_visible in
// fs/namespace.c): some proc mount of this namespace must be fully visible, i.e. mounted at
// its root, not locked read-only or with other atime flags than the new mount's, and with
// nothing mounted over anything but the directories the kernel keeps empty for other file
// systems.
type ProcView struct {
	Known  bool        // /proc/self/mountinfo was read and parsed
	Err    string      // why it is unknown: "" when Known or when the file is absent
	Mounts []ProcMount // every proc mount, in mount order
}

// ProcMount is one mount of a proc file system.
type ProcMount struct {
	MountPoint string // "/proc", "/dev/.lxc/proc"
	Root       string // "/" unless only a subdirectory of proc is mounted there
	ReadOnly   bool   // ro in the mount's or the super block's options
	Atime      string // "relatime", "noatime", "nodiratime" or "strictatime"
	Subset     bool   // subset=pid: only the process directories are there
	Covers     []ProcCover
}

// ProcCover is a mount directly on top of part of a proc mount.
type ProcCover struct {
	Path   string // its mount point, e.g. "/proc/kcore"
	FSType string // "tmpfs", "devtmpfs" (a /dev/null bind), "proc" (a read-only self-bind), "binfmt_misc"
	// Empty is true where the kernel keeps a permanently empty directory for another file
	// system (/proc/sys/fs/binfmt_misc, /proc/fs/nfsd, /proc/xen, /proc/openprom): a mount
	// there hides nothing and does not count against the proc mount.
	Empty bool
}

// emptyDirsExemptSince is the first release whose fresh-proc rule passes over mounts on
// the kernel's permanently empty directories.
var emptyDirsExemptSince = [2]int{4, 2}

// kernelEmptyProcDirs are the directories procfs creates with make_empty_dir_inode
// (proc_create_mount_point, register_sysctl_mount_point), relative to proc's root.
func kernelEmptyProcDirs() []string {
	return []string{"/sys/fs/binfmt_misc", "/fs/nfsd", "/xen", "/openprom"}
}

// FullyVisible applies mnt_already_visible to this mount for bwrap's proc mount, which is
// read-write with the default relatime: only then may a user namespace mount another proc.
func (m ProcMount) FullyVisible() bool {
	if m.Root != "/" || m.ReadOnly || m.Subset || m.Atime != "relatime" {
		return false
	}
	return len(m.Masks()) == 0
}

// Masks are the mount points of the covers that hide content.
func (m ProcMount) Masks() []string {
	var masks []string
	for _, cover := range m.Covers {
		if !cover.Empty {
			masks = append(masks, cover.Path)
		}
	}
	return masks
}

// Masks lists what hides part of the proc mounted at /proc (the topmost one there): the
// container runtimes' masks of /proc/kcore, /proc/acpi and the like, and their read-only
// self-binds of /proc/sys. Mounts on the kernel's empty directories are left out.
func (v ProcView) Masks() []string {
	var masks []string
	for _, m := range v.Mounts {
		if m.MountPoint == "/proc" {
			masks = m.Masks()
		}
	}
	return masks
}

// VisibleProc returns the mount point of a fully visible proc mount, "/proc" itself on a
// plain host, "/dev/.lxc/proc" in a nested LXD or Incus container; ok is false when none is,
// and then the kernel refuses bwrap a fresh proc in its user namespace.
func (v ProcView) VisibleProc() (mountPoint string, ok bool) {
	for _, m := range v.Mounts {
		if m.FullyVisible() {
			return m.MountPoint, true
		}
	}
	return "", false
}

// procView builds the view from the mount table. Only direct children of a proc mount count,
// as in the kernel: what is mounted deeper sits on a cover that already counts.
//
// The kernel's exemption of its permanently empty directories began in Linux 4.2
// (is_empty_dir_inode in fs_fully_visible); before it, a mount there (systemd's
// binfmt_misc automount, say) blocked a fresh proc like any other cover. An unreadable
// release is taken as a current kernel: every real Linux host shows one, and taking it as
// old would blame the host's binfmt_misc for a refusal it does not cause.
func procView(mounts []mount, release string) ProcView {
	emptyExempt := release == "" || kernel.AtLeast(release, emptyDirsExemptSince[0], emptyDirsExemptSince[1])
	view := ProcView{Known: true}
	for _, m := range mounts {
		if m.fsType != "proc" {
			continue
		}
		proc := ProcMount{MountPoint: m.point, Root: m.root,
			ReadOnly: hasOption(m.options, "ro") || hasOption(m.superOptions, "ro"),
			Atime:    atimeOf(m.options), Subset: hasOption(m.superOptions, "subset=")}
		for _, child := range mounts {
			if child.parent != m.id || child.id == m.id {
				continue
			}
			inside, ok := strings.CutPrefix(child.point, strings.TrimSuffix(m.point, "/"))
			if !ok || !strings.HasPrefix(inside, "/") {
				continue
			}
			// A bind of a proc subdirectory (/proc/sys) has that directory as its root, so
			// the cover's place inside proc is the root joined with the path below the mount.
			proc.Covers = append(proc.Covers, ProcCover{Path: child.point, FSType: child.fsType,
				Empty: emptyExempt && isKernelEmptyDir(path.Join(m.root, inside))})
		}
		view.Mounts = append(view.Mounts, proc)
	}
	return view
}

func isKernelEmptyDir(inside string) bool {
	for _, dir := range kernelEmptyProcDirs() {
		if inside == dir {
			return true
		}
	}
	return false
}

// atimeOf names a mount's atime flags as mountinfo shows them; none shown is strictatime.
func atimeOf(options string) string {
	for _, flag := range []string{"noatime", "nodiratime", "relatime"} {
		if hasOption(options, flag) {
			return flag
		}
	}
	return "strictatime"
}

// readMounts reads /proc/self/mountinfo once for every fact that needs it.
func readMounts(r *reader, release string) ([]mount, ProcView) {
	data, err := r.fact(pathMountinfo, maxTableSize)
	if err != nil {
		if isNotExist(err) {
			return nil, ProcView{}
		}
		return nil, ProcView{Err: reason(err)}
	}
	mounts, malformed := parseMountinfo(string(data))
	if len(mounts) == 0 {
		why := "empty"
		if malformed > 0 {
			why = fmt.Sprintf("no mountinfo line among %d", malformed)
			r.problem(pathMountinfo, fmt.Errorf("%s", why))
		}
		return nil, ProcView{Err: why}
	}
	return mounts, procView(mounts, release)
}
