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
// interrupted by a context, so the wait is a poll bounded by ctx.
const lockPollInterval = 50 * time.Millisecond

// lockHome takes <home>/.lock exclusively. The kernel drops the lock when its holder
// dies, so an installer killed mid-download never blocks the next one.
func lockHome(ctx context.Context, home string) (unlock func(), err error) {
	name := filepath.Join(home, ".lock")
	file, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, &LocalError{fmt.Errorf("opening lock file: %w", err)}
	}
	started := time.Now()
	for {
		err := unix.Flock(int(file.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { file.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			file.Close()
			return nil, &LocalError{fmt.Errorf("locking %s: %w", name, err)}
		}
		select {
		case <-ctx.Done():
			file.Close()
			return nil, fmt.Errorf("another installer holds %s; gave up after %s: %w",
				name, time.Since(started).Round(time.Millisecond), ctx.Err())
		case <-time.After(lockPollInterval):
		}
	}
}
