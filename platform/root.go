package platform

import (
	"io/fs"
	"os"
	"syscall"
)

// HostRoot is the real host's root for Detect: like os.DirFS("/"), but every file is opened
// with O_NONBLOCK, so a FIFO put where a proc or marker file should be (in a container the
// user controls /run and /) cannot hang the doctor between the mode check and the open.
// O_NONBLOCK changes nothing for regular files.
func HostRoot() fs.FS { return hostRoot{} }

type hostRoot struct{}

func (hostRoot) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	file, err := os.OpenFile("/"+name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	return file, nil
}

// Stat never opens: a stat cannot block on a FIFO or a stale device.
func (hostRoot) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	return os.Stat("/" + name)
}
