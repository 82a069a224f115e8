// Package kernel compares Linux kernel releases, as uname and /proc/sys/kernel/osrelease
// give them ("6.18.44-fc-v1045", "5.15.153.1-microsoft-standard-WSL2"), with the
// major.minor at which a kernel behaviour a decision depends on began.
package kernel

import (
	"strconv"
	"strings"
)

// AtLeast reports whether release is major.minor or later. A release it cannot read
// counts as older: each caller says what that means for its decision.
func AtLeast(release string, major, minor int) bool {
	fields := strings.FieldsFunc(release, func(r rune) bool { return r == '.' || r == '-' || r == '+' })
	if len(fields) < 2 {
		return false
	}
	gotMajor, err1 := strconv.Atoi(fields[0])
	gotMinor, err2 := strconv.Atoi(fields[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return gotMajor > major || (gotMajor == major && gotMinor >= minor)
}
