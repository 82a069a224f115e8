package trust

import (
	"bufio"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// IDRange is one line of a uid_map: Count ids from Inside map to Outside in the parent.
type IDRange struct {
	Inside, Outside, Count uint64
}

// ParseIDMap reads /proc/PID/uid_map's lines; a malformed line is skipped.
func ParseIDMap(r io.Reader) []IDRange {
	var ranges []IDRange
	scanner := bufio.NewScanner(r)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) != 3 {
			continue
		}
		var numbers [3]uint64
		ok := true
		for i, field := range fields {
			n, err := strconv.ParseUint(field, 10, 64)
			numbers[i], ok = n, ok && err == nil
		}
		if ok {
			ranges = append(ranges, IDRange{Inside: numbers[0], Outside: numbers[1], Count: numbers[2]})
		}
	}
	return ranges
}

// ViewerFor is what uid's owners mean under the namespace's uid map and overflow uid. A
// map that could not be read is the initial namespace's: an owner then means what it says.
func ViewerFor(uid uint32, ranges []IDRange, overflow uint32) Viewer {
	if len(ranges) == 0 {
		v := Initial(uid)
		v.Overflow = overflow
		return v
	}
	v := Viewer{UID: uid, Overflow: overflow, OverflowUnmapped: true,
		Namespaced: !(len(ranges) == 1 && ranges[0].Inside == 0 && ranges[0].Outside == 0 && ranges[0].Count == 4294967295)}
	for _, r := range ranges {
		if uint64(uid) >= r.Inside && uint64(uid)-r.Inside < r.Count && r.Outside+uint64(uid)-r.Inside == 0 {
			v.ParentRoot = true
		}
		if uint64(overflow) >= r.Inside && uint64(overflow)-r.Inside < r.Count {
			v.OverflowUnmapped = false
		}
		if r.Outside == 0 && r.Count > 0 {
			v.ParentRootMapped = true
		}
	}
	return v
}

// Current is this process's viewer: its effective uid, its namespace's uid map and the
// kernel's overflow uid, read once (a Go process cannot change its user namespace).
var Current = sync.OnceValue(func() Viewer {
	overflow := uint32(65534)
	if data, err := os.ReadFile("/proc/sys/kernel/overflowuid"); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 32); err == nil {
			overflow = uint32(n)
		}
	}
	var ranges []IDRange
	if file, err := os.Open("/proc/self/uid_map"); err == nil {
		ranges = ParseIDMap(file)
		file.Close()
	}
	return ViewerFor(uint32(os.Geteuid()), ranges, overflow)
})

// Lstat is the Entry at path, not following a symlink in its last component.
func Lstat(path string) (Entry, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return Entry{}, err
	}
	return EntryOf(path, info), nil
}

// EntryOf is the Entry for a FileInfo from lstat (no owner where the FileInfo carries none).
func EntryOf(path string, info fs.FileInfo) Entry {
	entry := Entry{Path: path, Mode: info.Mode()}
	if stat, ok := info.Sys().(*syscall.Stat_t); ok {
		entry.UID, entry.GID = stat.Uid, stat.Gid
	}
	return entry
}

// UpFrom is path's entry and each directory's above it, to /, by lstat.
func UpFrom(path string) ([]Entry, error) {
	var entries []Entry
	for current := filepath.Clean(path); ; current = filepath.Dir(current) {
		entry, err := Lstat(current)
		if err != nil {
			return nil, err
		}
		entries = append(entries, entry)
		if current == "/" || current == "." {
			return entries, nil
		}
	}
}
