package livetest

import (
	"os"
	"syscall"
)

// WriteProgram is os.WriteFile for a file the test then executes (a stand-in tool, an
// impostor bwrap, a script). It holds syscall.ForkLock for reading while the file is open
// for writing, so no process forked meanwhile (by a parallel test) takes a copy of the
// write descriptor into the moment before its own exec: with one held, executing the file
// fails with ETXTBSY, "text file busy" (Go issue 22315), and a test fails at random.
func WriteProgram(name string, data []byte, perm os.FileMode) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	return os.WriteFile(name, data, perm)
}
