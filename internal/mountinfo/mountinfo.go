// Package mountinfo reads the fields of /proc/PID/mountinfo (proc(5)), where the kernel
// writes a space, tab, newline or backslash in a path as an octal escape (\040).
package mountinfo

import "strconv"

// Unescape undoes the kernel's octal escapes in one field. A field without a backslash,
// nearly every one, is returned as it is, without allocating: the cgroup layout is read
// from mountinfo at the start of every run.
func Unescape(field string) string {
	first := -1
	for i := 0; i < len(field); i++ {
		if field[i] == '\\' {
			first = i
			break
		}
	}
	if first < 0 {
		return field
	}
	out := make([]byte, 0, len(field))
	out = append(out, field[:first]...)
	for i := first; i < len(field); i++ {
		if field[i] == '\\' && i+4 <= len(field) {
			if value, err := strconv.ParseUint(field[i+1:i+4], 8, 8); err == nil {
				out = append(out, byte(value))
				i += 3
				continue
			}
		}
		out = append(out, field[i])
	}
	return string(out)
}
