package platform

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// maxFileSize bounds every read of a setting or a status file: those are a few KiB at most,
// and a larger one is not what it claims to be.
const maxFileSize = 64 << 10

// maxTableSize bounds the files that grow with the host: mountinfo lists every mount (a
// Kubernetes node has thousands), and a kernel's build config runs to a few hundred KiB.
const maxTableSize = 4 << 20

// reader reads files from the injected root and collects what went wrong, so that one odd
// file costs one field, never the whole detection.
type reader struct {
	fsys     fs.FS
	problems []string
}

// read returns the file's content. An absent file returns an error matching fs.ErrNotExist
// and is not a problem: it says the kernel or host lacks the feature. Any other failure is
// recorded.
func (r *reader) read(name string) ([]byte, error) {
	data, err := readBounded(r.fsys, name, maxFileSize)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.problem(name, err)
	}
	return data, err
}

// file is read for callers that only need to know whether content is there.
func (r *reader) file(name string) ([]byte, bool) {
	data, err := r.read(name)
	return data, err == nil
}

// exists reports whether name exists, of any type (markers such as /.dockerenv or /run/WSL).
func (r *reader) exists(name string) bool {
	_, err := fs.Stat(r.fsys, name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.problem(name, err)
	}
	return err == nil
}

// knob reads one integer setting with parse.
func (r *reader) knob(name string, parse func(string) (int64, error)) Knob {
	data, err := readBounded(r.fsys, name, maxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return Knob{}
	}
	if err != nil {
		return Knob{Err: r.problem(name, err)}
	}
	raw := strings.TrimSpace(string(data))
	value, err := parse(raw)
	if err != nil {
		return Knob{Raw: raw, Err: r.problem(name, err)}
	}
	return Knob{Present: true, Value: value, Raw: raw}
}

// problem records "/name: reason" and returns the reason.
func (r *reader) problem(name string, err error) string {
	// The path is already in front of the reason; repeating it only adds noise.
	why := reason(err)
	line := "/" + name + ": " + why
	if !slices.Contains(r.problems, line) {
		// Some files back two facts (PID 1's cgroup); one odd file is one problem.
		r.problems = append(r.problems, line)
	}
	return why
}

// fact reads a file a new fact rests on, with limit as the bound. Unlike read it records only
// what is odd about the tree (a FIFO, a directory, a huge file, garbage): a permission error
// (PID 1's environ for a non-root user) or EINVAL (attr/current without an LSM behind it) is
// what such a host normally answers, so it leaves the fact unknown without a warning.
func (r *reader) fact(name string, limit int) ([]byte, error) {
	data, err := readBounded(r.fsys, name, limit)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) &&
		!errors.Is(err, syscall.EINVAL) {
		r.problem(name, err)
	}
	return data, err
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// reason is the error without the path in front, for a fact's Err field.
func reason(err error) string {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err.Error()
	}
	return err.Error()
}

// readRegular reads a small file with the default bound.
func readRegular(fsys fs.FS, name string) ([]byte, error) {
	return readBounded(fsys, name, maxFileSize)
}

// readBounded refuses anything but a regular file before opening it: opening a FIFO
// blocks, and a directory or device in place of a proc file means the tree is not what it
// seems. The file is checked again once open, through the open file, so a FIFO swapped in
// between the two is still refused before any read (HostRoot opens with O_NONBLOCK, so
// the open itself cannot block either).
func readBounded(fsys fs.FS, name string, limit int) ([]byte, error) {
	info, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return nil, errors.New("is a directory")
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%v)", info.Mode().Type())
	}
	file, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if info, err := file.Stat(); err != nil {
		return nil, err
	} else if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file once opened (%v)", info.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(file, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

// parseInteger reads a decimal sysctl value.
func parseInteger(raw string) (int64, error) {
	value, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not an integer: %q", raw)
	}
	return value, nil
}

// parseYesNo reads a boolean module parameter, which the kernel prints as Y or N.
func parseYesNo(raw string) (int64, error) {
	switch raw {
	case "Y":
		return 1, nil
	case "N":
		return 0, nil
	}
	return 0, fmt.Errorf("want Y or N, got %q", raw)
}
