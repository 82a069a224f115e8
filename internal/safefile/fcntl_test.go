package safefile

import (
	"os"

	"golang.org/x/sys/unix"
)

func fcntlFlags(file *os.File) (int, error) {
	return unix.FcntlInt(file.Fd(), unix.F_GETFL, 0)
}
