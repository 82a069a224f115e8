// Package earlysignal gives SIGINT, SIGTERM and SIGHUP back their default action at the
// first moment a Go program can: this package's initialisation, which depends on no other
// package and so runs among the very first.
//
// A shell starts `cmd &` and nohup with SIGINT or SIGHUP ignored, and the kernel drops a
// signal whose disposition is ignore. Go keeps an inherited ignore until signal.Notify,
// so a signal that arrived while the program's packages were still initialising (tens of
// milliseconds on a loaded host) was lost and the run went on without it. With the
// default action back, such a signal ends the process before it has started anything;
// main's signal.Notify takes over from there. What is left is the Go runtime's own start,
// before any package of the program runs (the kernel drops a signal then, whatever the
// program would do).
package earlysignal

import "unsafe"

// kernelSigaction is the kernel's struct sigaction on linux/amd64 and linux/arm64.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const (
	sigHangup    = 1
	sigInterrupt = 2
	sigTerminate = 15

	sigDefault = 0
	sigIgnore  = 1
)

// rtSigaction is the raw rt_sigaction system call (assembly: package syscall, with its
// own dependencies, would be initialised first); it returns 0 or -errno.
func rtSigaction(sig uintptr, action, old unsafe.Pointer, maskSize uintptr) int64

// restored counts the signals whose inherited ignore was undone (for the tests).
var restored int

func init() {
	for _, sig := range []uintptr{sigInterrupt, sigTerminate, sigHangup} {
		var old kernelSigaction
		if rtSigaction(sig, nil, unsafe.Pointer(&old), unsafe.Sizeof(old.mask)) != 0 || old.handler != sigIgnore {
			continue // already at its default, or handled
		}
		action := kernelSigaction{handler: sigDefault}
		if rtSigaction(sig, unsafe.Pointer(&action), nil, unsafe.Sizeof(action.mask)) == 0 {
			restored++
		}
	}
}
