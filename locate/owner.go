package locate

import (
	"io/fs"
	"syscall"
)

// ownerOf returns the file's owner uid, or 0 where the FileInfo carries none (fixtures).
func ownerOf(info fs.FileInfo) uint32 {
	if stat, ok := info.Sys().(*syscall.Stat_t); ok {
		return stat.Uid
	}
	return 0
}
