package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// lockPollInterval is how often a waiting installer retries the lock: flock cannot be
// interrupted by a context, so the wait is a poll bounded by ctx (--timeout, SIGTERM).
const lockPollInterval = 50 * time.Millisecond

// lockHome takes <home>/.lock exclusively. The kernel drops the lock when its holder
// dies, so an installer killed mid-download never blocks the next one. waiting is called
// once, when another installer holds the lock.
func lockHome(ctx context.Context, home string, waiting func(name string)) (unlock func(), err error) {
	name := filepath.Join(home, ".lock")
	file, err := openLockFile(name)
	if err != nil {
		return nil, &LocalError{err}
	}
	started := time.Now()
	timer := time.NewTimer(lockPollInterval)
	defer timer.Stop()
	for attempt := 0; ; attempt++ {
		err := unix.Flock(int(file.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { file.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			file.Close()
			return nil, &LocalError{fmt.Errorf("locking %s: %w", name, err)}
		}
		if attempt == 0 && waiting != nil {
			waiting(name)
		}
		timer.Reset(lockPollInterval)
		select {
		case <-ctx.Done():
			file.Close()
			return nil, fmt.Errorf("another installer holds %s; gave up after %s: %w",
				name, time.Since(started).Round(time.Millisecond), ctx.Err())
		case <-timer.C:
		}
	}
}

// openLockFile opens or creates the lock without following a symlink at its name (as
// root, O_CREAT through a planted link would create the link's target) and without
// blocking on a FIFO put there.
func openLockFile(name string) (*os.File, error) {
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("lock file %s is a symbolic link (remove it; bwrapkit creates the lock itself)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	var stat unix.Stat_t
	if err := unix.Fstat(fd, &stat); err != nil || stat.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("lock file %s is not a regular file (remove it; bwrapkit creates the lock itself)", name)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	return os.NewFile(uintptr(fd), name), nil
}
