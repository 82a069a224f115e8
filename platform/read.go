package platform

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
)

// maxFileSize bounds every read: the files read here are a few KiB at most, and a larger
// one is not what it claims to be.
const maxFileSize = 1 << 20

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
	data, err := readRegular(r.fsys, name)
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
	data, err := readRegular(r.fsys, name)
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
	reason := err.Error()
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		// The path is already in front of the reason; repeating it only adds noise.
		reason = pathErr.Err.Error()
	}
	r.problems = append(r.problems, "/"+name+": "+reason)
	return reason
}

// readRegular refuses anything but a regular file before opening it: opening a FIFO
// blocks, and a directory or device in place of a proc file means the tree is not what it
// seems.
func readRegular(fsys fs.FS, name string) ([]byte, error) {
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
	data, err := io.ReadAll(io.LimitReader(file, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("larger than %d bytes", maxFileSize)
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
