package home

import (
	"encoding/json"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// sizesName is the file in each homes' root (out of every sandbox's reach, like the
// records) that keeps each HOME's last measured size, so that a check run every minute
// need not walk every cache file of every HOME each time. Its name starts with a dot: no
// listing takes it for a HOME, and prune never touches it.
const sizesName = ".sizes.json"

// sizesMax bounds the file read: a few hundred bytes per HOME.
const sizesMax = 4 << 20

// Stored is a HOME's size as last measured.
type Stored struct {
	Bytes int64     `json:"bytes"`
	At    time.Time `json:"at"`     // taken before the walk began
	InUse bool      `json:"in_use"` // a run held it then: the figure was a moving one
}

// storedMargin covers file system timestamps, which come from the kernel's coarse clock
// and may read a few milliseconds behind a time.Now taken just before: a change that close
// to a measurement counts as after it.
const storedMargin = 2 * time.Second

// StoredFresh decides (pure) whether a stored size still stands for a HOME: it was
// measured at most maxAge ago (and not in the future: a clock set back), nothing says the
// HOME changed since (changed: the latest of its record's, its own and its layers'
// mtimes; every `bwrapkit run` moves its record at start), and no run held the HOME then
// or holds it now (a HOME in use is growing). A Go API run records nothing, so the age
// bound is what limits how far its writes can go unseen.
func StoredFresh(stored Stored, changed time.Time, inUse bool, now time.Time, maxAge time.Duration) bool {
	switch {
	case stored.At.IsZero(), stored.InUse, inUse:
		return false
	case stored.At.After(now), now.Sub(stored.At) > maxAge:
		return false
	}
	return changed.Before(stored.At.Add(-storedMargin))
}

// sizesFile is the stored figures of one root, by HOME name.
type sizesFile struct {
	Homes map[string]Stored `json:"homes"`
}

// readSizes reads the root's stored figures: only a regular file of the caller's, not a
// link, bounded; anything else is no figures (every HOME is walked).
func readSizes(rootFD int) map[string]Stored {
	fd, err := unix.Openat(rootFD, sizesName, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	file := os.NewFile(uintptr(fd), sizesName)
	defer file.Close()
	info, err := file.Stat()
	if err != nil || !info.Mode().IsRegular() || info.Size() > sizesMax || !ownedByCaller(fd) {
		return nil
	}
	data := make([]byte, info.Size()+1)
	n, _ := file.Read(data)
	var stored sizesFile
	if n > int(info.Size()) || json.Unmarshal(data[:n], &stored) != nil {
		return nil
	}
	return stored.Homes
}

func ownedByCaller(fd int) bool {
	var stat unix.Stat_t
	return unix.Fstat(fd, &stat) == nil && int(stat.Uid) == os.Geteuid()
}

// writeSizes replaces the root's stored figures atomically (a temp file renamed over it),
// so a concurrent reader sees the old file or the new one. A root the caller cannot write
// keeps none: the sizes are then walked every time, and stay right.
func writeSizes(rootFD int, homes map[string]Stored) error {
	data, err := json.Marshal(sizesFile{Homes: homes})
	if err != nil {
		return err
	}
	temp := ".sizes." + newSuffix()
	fd, err := unix.Openat(rootFD, temp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	file := os.NewFile(uintptr(fd), temp)
	_, err = file.Write(data)
	if closeErr := file.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = unix.Renameat(rootFD, temp, rootFD, sizesName)
	}
	if err != nil {
		unix.Unlinkat(rootFD, temp, 0)
	}
	return err
}

// newSuffix names a temp file uniquely enough for one root: the pid and the clock.
func newSuffix() string {
	return strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}
