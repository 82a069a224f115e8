package probe

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/bwrapkit/bwrapkit/internal/mountinfo"
	"golang.org/x/sys/unix"
)

// errnoName is the errno's name ("EPERM"), "" for success, or the error's text when it
// carries no errno.
func errnoName(err error) string {
	if err == nil {
		return ""
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if errno == 0 {
			return ""
		}
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

// observeProcSurface tries to write the sysctl's own value back (harmless if it lands),
// reads how each read-only path is mounted, and what each masked path shows.
func observeProcSurface(request ProcSurfaceRequest) *ProcSurfaceObservation {
	observation := &ProcSurfaceObservation{Sysctl: request.Sysctl, ReadOnlyMounts: map[string]string{},
		Masked: map[string]string{}, MaskedError: map[string]string{}, MaskMounts: map[string]string{}}
	if request.Sysctl != "" {
		value, err := os.ReadFile(request.Sysctl)
		observation.SysctlValue = strings.TrimSpace(string(value))
		if err != nil {
			observation.OpenError = "read: " + errnoName(err)
		} else if fd, err := unix.Open(request.Sysctl, unix.O_WRONLY|unix.O_CLOEXEC, 0); err != nil {
			observation.OpenError = errnoName(err)
		} else {
			// Its own value, so even a sandbox that lets the write through changes nothing.
			_, err := unix.Write(fd, value)
			observation.WriteError = errnoName(err)
			unix.Close(fd)
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		observation.Error = err.Error()
	}
	options := mountOptions(string(mounts))
	for _, path := range request.ReadOnly {
		observation.ReadOnlyMounts[path] = options[path]
	}
	for _, path := range append(slices.Clone(request.MaskFiles), request.MaskDirs...) {
		observation.MaskMounts[path] = options[path]
	}
	for _, path := range request.MaskFiles {
		content, err := readStart(path)
		observation.Masked[path] = content
		if err != nil {
			observation.MaskedError[path] = errnoName(err)
		}
	}
	for _, path := range request.MaskDirs {
		entries, err := list(path)
		observation.Masked[path] = strings.Join(entries, " ")
		if err != nil {
			observation.MaskedError[path] = errnoName(err)
		}
	}
	return observation
}

// mountOptions maps each mount point in a mountinfo text to its per-mount options; a
// later line (a mount on top) wins. Mount points escape blanks as \040.
func mountOptions(text string) map[string]string {
	options := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 6 {
			continue
		}
		point := mountinfo.Unescape(fields[4])
		options[point] = fields[5]
	}
	return options
}

// observeSetuid tries every way to get a setuid or setgid file or directory in dir: the
// filter must refuse each (as root a setuid-root file left in the workdir is a root
// shell for any host user; without the filter the file's owner may set the bit).
func observeSetuid(dir string) *SetuidObservation {
	observation := &SetuidObservation{}
	attempt := func(name string, err error) {
		observation.Attempts = append(observation.Attempts, SyscallAttempt{Syscall: name, Errno: errnoName(err)})
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte(Content), 0o644); err != nil {
		observation.Control = "create: " + errnoName(err)
		return observation
	}
	attempt("chmod 04755", unix.Fchmodat(unix.AT_FDCWD, plain, 0o4755, 0))
	attempt("chmod 02755", unix.Fchmodat(unix.AT_FDCWD, plain, 0o2755, 0))
	if fd, err := unix.Open(plain, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		attempt("fchmod 06755", unix.Fchmod(fd, 0o6755))
		unix.Close(fd)
	}
	fd, err := unix.Open(filepath.Join(dir, "created"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o4755)
	if err == nil {
		unix.Close(fd)
	}
	attempt("open O_CREAT 04755", err)
	attempt("mkdir 02755", unix.Mkdir(filepath.Join(dir, "sgid-dir"), 0o2755))
	attempt("mknod 04755", unix.Mknod(filepath.Join(dir, "node"), unix.S_IFREG|0o4755, 0))
	observation.Control = errnoName(unix.Fchmodat(unix.AT_FDCWD, plain, 0o700, 0))
	return observation
}

// observeKeyring tries to reach a keyring from inside: the session keyring's id, a key
// planted in the caller's user keyring (the host looks for it after), a key requested,
// and /proc/keys, which lists every key the reader may view.
func observeKeyring(description string) *KeyringObservation {
	observation := &KeyringObservation{}
	attempt := func(name string, err error) {
		observation.Attempts = append(observation.Attempts, SyscallAttempt{Syscall: name, Errno: errnoName(err)})
	}
	_, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
	attempt("keyctl get session keyring", err)
	_, err = unix.KeyctlGetKeyringID(unix.KEY_SPEC_USER_KEYRING, false)
	attempt("keyctl get user keyring", err)
	_, err = unix.AddKey("user", description, []byte("planted by the bwrapkit doctor's probe"), unix.KEY_SPEC_USER_KEYRING)
	attempt("add_key to the user keyring", err)
	_, err = unix.RequestKey("user", description, "", unix.KEY_SPEC_USER_KEYRING)
	attempt("request_key", err)
	content, err := readStart("/proc/keys")
	observation.ProcKeys = content
	observation.ProcKeysError = errnoName(err)
	return observation
}

// rlimitResources are the rlimits the sandbox sets (sandbox/limits), by number.
var rlimitResources = []int{unix.RLIMIT_AS, unix.RLIMIT_CORE, unix.RLIMIT_FSIZE, unix.RLIMIT_NOFILE, unix.RLIMIT_NPROC}

// observeLimits reads every rlimit and tries to raise each hard limit by one, then fills
// the private tmpfs at dir until the kernel refuses or MaxFill is reached.
func observeLimits(request LimitsRequest) *LimitsObservation {
	observation := &LimitsObservation{}
	for _, resource := range rlimitResources {
		entry := RlimitObservation{Resource: resource}
		var limit unix.Rlimit
		if err := unix.Getrlimit(resource, &limit); err != nil {
			entry.Error = errnoName(err)
		} else {
			entry.Cur, entry.Max = limit.Cur, limit.Max
			raised := limit
			if limit.Max != unix.RLIM_INFINITY {
				raised.Max = limit.Max + 1
			}
			entry.Raise = errnoName(unix.Setrlimit(resource, &raised))
		}
		observation.Rlimits = append(observation.Rlimits, entry)
	}
	if request.TmpfsDir != "" {
		observation.Filled, observation.FillErrno, observation.FillError = fill(filepath.Join(request.TmpfsDir, "bwrapkit-doctor-fill"), request.MaxFill)
	}
	return observation
}

// fill writes zeros to a new file until an error or max bytes, then removes it.
func fill(path string, max uint64) (written uint64, errno, text string) {
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, errnoName(err), err.Error()
	}
	defer os.Remove(path)
	defer file.Close()
	chunk := make([]byte, 64<<10)
	for written < max {
		n, err := file.Write(chunk[:min(uint64(len(chunk)), max-written)])
		written += uint64(n)
		if err != nil {
			return written, errnoName(err), err.Error()
		}
	}
	return written, "", ""
}
