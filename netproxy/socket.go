package netproxy

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// socketDirPrefix names the proxies' socket directories.
const socketDirPrefix = "bwrapkit-net-"

// maxSocketPath is what sockaddr_un holds (108 bytes with the terminating NUL).
const maxSocketPath = 107

// Listen makes a fresh private directory (0700) and listens on a unix socket in it:
// $TMPDIR when it is a usable absolute directory, else /tmp, else /var/tmp, /dev/shm. A
// TMPDIR naming nothing, a file or a path too long for a socket passes on to the next;
// remove the directory when done.
func Listen(getenv func(string) string) (listener net.Listener, dir string, err error) {
	var tried []string
	for _, base := range []string{getenv("TMPDIR"), "/tmp", "/var/tmp", "/dev/shm"} {
		if !filepath.IsAbs(base) {
			continue
		}
		removeAbandoned(base)
		dir, err := os.MkdirTemp(base, socketDirPrefix)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		socket := filepath.Join(dir, "proxy.sock")
		if len(socket) > maxSocketPath {
			os.Remove(dir)
			tried = append(tried, socket+": too long for a unix socket")
			continue
		}
		listener, err := net.Listen("unix", socket)
		if err != nil {
			os.RemoveAll(dir)
			tried = append(tried, err.Error())
			continue
		}
		return listener, dir, nil
	}
	return nil, "", fmt.Errorf("no directory for the network proxy's socket: %w", errors.New(strings.Join(tried, "; ")))
}

// settleBound is how long a socket directory must have stood unchanged before a refused
// connect means its proxy is gone. A run being set up has made its directory and not yet
// bound (ENOENT) or not yet listened (ECONNREFUSED) on its socket; another run's sweep in
// that moment removed a live run's socket (measured: 1 in 300 runs at 6 concurrent under
// -race failed with "is not a unix socket"). Setting up takes microseconds.
const settleBound = 10 * time.Second

// removeAbandoned removes the socket directories of runs that ended without removing
// their own (a SIGKILLed bwrapkit runs no cleanup): the caller's own real directories
// whose socket no proxy listens on any more, unchanged for settleBound. A live run's
// socket answers until its bridge's hand-over, after which the run removes the directory
// itself; so what is left is a run killed before the hand-over.
func removeAbandoned(base string) {
	removeAbandonedBefore(base, time.Now().Add(-settleBound))
}

func removeAbandonedBefore(base string, settled time.Time) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, entry := range entries {
		if !entry.IsDir() || !strings.HasPrefix(entry.Name(), socketDirPrefix) {
			continue
		}
		dir := filepath.Join(base, entry.Name())
		var stat unix.Stat_t
		if unix.Lstat(dir, &stat) != nil || stat.Mode&unix.S_IFMT != unix.S_IFDIR || int(stat.Uid) != os.Geteuid() {
			continue
		}
		if time.Unix(stat.Mtim.Unix()).After(settled) {
			continue // perhaps a run setting up its socket right now
		}
		conn, err := net.Dial("unix", filepath.Join(dir, "proxy.sock"))
		if err == nil {
			conn.Close()
			continue
		}
		if errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, unix.ENOENT) {
			os.RemoveAll(dir)
		}
	}
}
