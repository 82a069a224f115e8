package home

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// A run holds a shared flock on its HOME directory itself for as long as it runs; a
// prune takes an exclusive one without waiting, and keeps a HOME it cannot lock. The
// kernel drops the lock when the run's process ends however it ends (killed, crashed),
// so no stale marker ever keeps a HOME, and no lock file is left to clean up.

// Held is a HOME a run holds.
type Held struct{ dir *os.File }

// ErrPruned is a HOME removed by a prune between the run's making it and its holding it.
var ErrPruned = errors.New("was removed by `bwrapkit home prune` just as this run started; run again")

// Hold takes the run's shared lock on home. It waits for a prune that holds the HOME
// (a prune is quick), then proves the HOME is still the directory it locked.
func Hold(home string) (*Held, error) {
	fd, err := unix.Open(home, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("HOME %s: %w", home, err)
	}
	dir := os.NewFile(uintptr(fd), home)
	if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		dir.Close()
		return nil, fmt.Errorf("HOME %s: locking: %w", home, err)
	}
	var held, named unix.Stat_t
	if unix.Fstat(fd, &held) != nil || held.Nlink == 0 || unix.Lstat(home, &named) != nil || named.Ino != held.Ino || named.Dev != held.Dev {
		dir.Close()
		return nil, fmt.Errorf("HOME %s %w", home, ErrPruned)
	}
	return &Held{dir: dir}, nil
}

// Release lets the HOME go (the process's end does too).
func (h *Held) Release() {
	if h != nil {
		h.dir.Close()
	}
}
