package platform

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// seedMountinfo adds every fixture's mount table to a corpus.
func seedMountinfo(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtures, "*", "proc", "self", "mountinfo"))
	for _, path := range paths {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(string(data))
		}
	}
	f.Add(hostRootLine + hostProcLine + kcoreMaskLine)
}

// FuzzMountinfo: any text parses without panicking, and a mask is always a cover of /proc.
func FuzzMountinfo(f *testing.F) {
	seedMountinfo(f)
	f.Fuzz(func(t *testing.T, text string) {
		mounts, malformed := parseMountinfo(text)
		if len(mounts)+malformed > strings.Count(text, "\n")+1 {
			t.Fatalf("%d mounts and %d malformed from %d lines", len(mounts), malformed, strings.Count(text, "\n")+1)
		}
		view := procView(mounts, "")
		for _, mask := range view.Masks() {
			if !strings.HasPrefix(mask, "/proc/") {
				t.Fatalf("mask %q is not under /proc", mask)
			}
		}
		if point, ok := view.VisibleProc(); ok && point == "" {
			t.Fatal("a visible proc without a mount point")
		}
	})
}

// FuzzDetect feeds one text to every file the new facts read: Detect must not panic, and
// what it cannot use it reports as unknown or as a problem naming the file.
func FuzzDetect(f *testing.F) {
	seedMountinfo(f)
	f.Add("container=lxc\x00HOME=/\x00")
	f.Add("docker-default (enforce)\n")
	f.Add("Name:\tsh\nTracerPid:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n")
	f.Add("Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016\n")
	f.Fuzz(func(t *testing.T, text string) {
		root := debianRoot()
		for _, path := range []string{pathMountinfo, pathAttrAppArmor, pathStatus, pathInitEnviron, pathContainerManager,
			pathVersion, "proc/1/cgroup", "proc/1/comm", "sys/class/dmi/id/board_name", "proc/sys/kernel/osrelease"} {
			root[path] = &fstest.MapFile{Data: []byte(text)}
		}
		host := Detect(root, nil, "linux", "amd64")
		for _, problem := range host.Problems {
			if !strings.HasPrefix(problem, "/") || !strings.Contains(problem, ": ") {
				t.Fatalf("problem %q does not name a file", problem)
			}
		}
		if host.AppArmorLabel.Known == (host.AppArmorLabel.Err != "") {
			t.Fatalf("label %+v is both known and failed, or neither", host.AppArmorLabel)
		}
		if host.Runtime != "" && len(host.RuntimeEvidence) == 0 {
			t.Fatalf("runtime %q without evidence", host.Runtime)
		}
	})
}
