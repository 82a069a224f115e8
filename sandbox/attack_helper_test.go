package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
)

// attackHelper is what a hostile command tries inside the sandbox. Each action only
// reports what the kernel allowed; the tests judge by the host's state afterwards.
func attackHelper(args []string) (int, bool) {
	switch args[0] {
	case "flip": // flip A B SECONDS STOPFILE: swap A and B (a directory and a symlink) in a loop
		seconds, _ := strconv.ParseFloat(args[3], 64)
		until := time.Now().Add(time.Duration(seconds * float64(time.Second)))
		swaps := 0
		for time.Now().Before(until) {
			if _, err := os.Lstat(args[4]); err == nil {
				break
			}
			if err := unix.Renameat2(unix.AT_FDCWD, args[1], unix.AT_FDCWD, args[2], unix.RENAME_EXCHANGE); err != nil {
				fmt.Println("flip:", errText(err))
				return 1, true
			}
			swaps++
			// Longer with A back in its first state (the directory), so runs under test
			// resolve both states and some get as far as the launch.
			if swaps%2 == 0 {
				time.Sleep(2 * time.Millisecond)
			} else {
				time.Sleep(100 * time.Microsecond)
			}
		}
		fmt.Println("swaps:", swaps)
	case "statdirs": // statdirs PATH...: "PATH: DEV:INO dir|link|file ro|rw", never following a symlink
		for _, path := range args[1:] {
			// One descriptor for both answers: the name may be swapped between two lookups.
			fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				fmt.Printf("%s: %s\n", path, errText(err))
				continue
			}
			var stat unix.Stat_t
			var fs unix.Statfs_t
			unix.Fstat(fd, &stat)
			kind := "file"
			switch stat.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				kind = "dir"
			case unix.S_IFLNK:
				kind = "link"
			}
			mode := "unknown"
			if kind != "link" && unix.Fstatfs(fd, &fs) == nil {
				mode = "rw"
				if fs.Flags&unix.ST_RDONLY != 0 {
					mode = "ro"
				}
			}
			unix.Close(fd)
			fmt.Printf("%s: %d:%d %s %s\n", path, stat.Dev, stat.Ino, kind, mode)
		}
	case "sysctl-write": // sysctl-write PATH...: write each sysctl's current value back
		for _, path := range args[1:] {
			value, err := os.ReadFile(path)
			if err == nil {
				err = os.WriteFile(path, value, 0)
			}
			fmt.Printf("%s: %s\n", path, errText(err))
		}
	case "setuid": // setuid DIR: every way to make a setuid or setgid file or directory
		dir := args[1]
		plain := filepath.Join(dir, "plain")
		livetest.WriteProgram(plain, []byte("#!/bin/sh\n"), 0o755)
		report := func(name string, err error) { fmt.Printf("%s: %s\n", name, errText(err)) }
		report("chmod-4755", unix.Chmod(plain, 0o4755))
		report("chmod-2755", unix.Chmod(plain, 0o2755))
		report("fchmodat-6755", unix.Fchmodat(unix.AT_FDCWD, plain, 0o6755, 0))
		if fd, err := unix.Open(plain, unix.O_RDONLY, 0); err == nil {
			report("fchmod-4755", unix.Fchmod(fd, 0o4755))
			unix.Close(fd)
		}
		fd, err := unix.Open(filepath.Join(dir, "created"), unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL, 0o4755)
		if err == nil {
			unix.Close(fd)
		}
		report("open-creat-4755", err)
		report("mkdir-2755", unix.Mkdir(filepath.Join(dir, "sgid-dir"), 0o2755))
		report("mknod-4755", unix.Mknod(filepath.Join(dir, "node"), unix.S_IFREG|0o4755, 0))
		report("chmod-0700", unix.Chmod(plain, 0o700))
	case "keys": // keys: read or plant keys in any keyring reachable from inside
		report := func(name string, err error) { fmt.Printf("%s: %s\n", name, errText(err)) }
		_, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
		report("keyctl-session", err)
		_, err = unix.KeyctlGetKeyringID(unix.KEY_SPEC_USER_KEYRING, false)
		report("keyctl-user", err)
		_, err = unix.AddKey("user", "bwrapkit-planted", []byte("planted"), unix.KEY_SPEC_USER_KEYRING)
		report("add-key-user", err)
		_, err = unix.RequestKey("user", "bwrapkit-canary", "", unix.KEY_SPEC_USER_KEYRING)
		report("request-key", err)
		_, err = os.ReadFile("/proc/keys")
		report("proc-keys", err)
	case "hostile-protect": // hostile-protect PATH...: move, delete, replace each protected path
		report := func(name string, err error) { fmt.Printf("%s: %s\n", name, errText(err)) }
		for _, path := range args[1:] {
			for parent := filepath.Dir(path); parent != "." && parent != "/" && !strings.HasSuffix(parent, ".."); parent = filepath.Dir(parent) {
				err := os.Rename(parent, parent+".moved")
				report("rename "+parent, err)
				if err == nil {
					os.MkdirAll(filepath.Dir(path), 0o755)
					os.WriteFile(path, []byte("replaced"), 0o644)
				}
			}
			report("rename "+path, os.Rename(path, path+".moved"))
			report("remove "+path, os.RemoveAll(path))
			report("replace "+path, os.WriteFile(path, []byte("replaced"), 0o644))
			report("inside "+path, os.WriteFile(filepath.Join(path, "planted"), []byte("planted"), 0o644))
		}
	case "bounds": // bounds: the rlimits inside, and writes past the tmpfs bound
		for _, r := range []struct {
			name     string
			resource int
		}{{"core", unix.RLIMIT_CORE}, {"nofile", unix.RLIMIT_NOFILE}, {"nproc", unix.RLIMIT_NPROC}, {"fsize", unix.RLIMIT_FSIZE}, {"as", unix.RLIMIT_AS}} {
			var limit unix.Rlimit
			unix.Getrlimit(r.resource, &limit)
			fmt.Printf("%s: %d/%d\n", r.name, limit.Cur, limit.Max)
			raised := unix.Rlimit{Cur: limit.Max, Max: limit.Max}
			if limit.Max != unix.RLIM_INFINITY {
				raised.Max = limit.Max + 1
			}
			fmt.Printf("raise-%s: %s\n", r.name, errText(unix.Setrlimit(r.resource, &raised)))
		}
		for _, dir := range []string{"/tmp", "/var/tmp", "/run", "/dev/shm"} {
			fmt.Printf("fill-%s: %s\n", dir, errText(fill(filepath.Join(dir, "fill"), 3<<20)))
		}
		fmt.Printf("write-/dev: %s\n", errText(os.WriteFile("/dev/planted", []byte("x"), 0o644)))
	case "forks": // forks N: children that wait, until fork fails or N exist; the count
		limit, _ := strconv.Atoi(args[1])
		made := 0
		var lastErr error
		for ; made < limit; made++ {
			child := exec.Command(os.Args[0], "hold")
			child.Env = os.Environ()
			if lastErr = child.Start(); lastErr != nil {
				break
			}
		}
		fmt.Printf("forked: %d\n", made)
		fmt.Printf("last: %s\n", errText(lastErr))
	case "rewrite": // rewrite FILE CONTENT
		report := func(name string, err error) { fmt.Printf("%s: %s\n", name, errText(err)) }
		report("rewrite "+args[1], os.WriteFile(args[1], []byte(args[2]), 0o644))
		report("replace "+args[1], replaceByRename(args[1], args[2]))
	default:
		return kernelSurfaceHelper(args)
	}
	return 0, true
}

// fill writes size bytes to path, a megabyte at a time.
func fill(path string, size int) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	defer file.Close()
	chunk := make([]byte, 1<<20)
	for written := 0; written < size; written += len(chunk) {
		if _, err := file.Write(chunk); err != nil {
			return err
		}
	}
	return file.Sync()
}

func replaceByRename(path, content string) error {
	temp := path + ".new"
	if err := os.WriteFile(temp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(temp, path)
}
