// Package version is bubblewrap's release numbering: exactly MAJOR.MINOR.PATCH, digits
// only, compared numerically. The doctor, the installer's manifest and the capability
// probe share this one parse.
//
// It is written here rather than taken from a semver library because bwrap's versions
// never carry pre-release or build parts, and a library that compiles regular expressions
// at package initialisation costs every `bwrapkit run` about half a millisecond before
// main (GODEBUG=inittrace=1), a tenth of a raw bwrap launch.
package version

import (
	"strconv"
	"strings"
)

// Version is one release, such as 0.12.0.
type Version struct{ Major, Minor, Patch int }

// Parse reads exactly digits.digits.digits; anything else ("0.11.0.1", "v1.2", "1",
// "0.13.0-rc1", a leading or trailing space) gives ok false.
func Parse(text string) (Version, bool) {
	parts := strings.Split(text, ".")
	if len(parts) != 3 {
		return Version{}, false
	}
	var numbers [3]int
	for i, part := range parts {
		// A number is 1 to 9 digits: no sign, no space, and no overflow on any platform.
		if part == "" || len(part) > 9 || strings.Trim(part, "0123456789") != "" {
			return Version{}, false
		}
		numbers[i], _ = strconv.Atoi(part)
	}
	return Version{numbers[0], numbers[1], numbers[2]}, true
}

// MustParse is Parse for constants written in the code; a malformed one panics.
func MustParse(text string) Version {
	v, ok := Parse(text)
	if !ok {
		panic("version: malformed constant " + strconv.Quote(text))
	}
	return v
}

// Less reports whether v is an earlier release than other.
func (v Version) Less(other Version) bool {
	if v.Major != other.Major {
		return v.Major < other.Major
	}
	if v.Minor != other.Minor {
		return v.Minor < other.Minor
	}
	return v.Patch < other.Patch
}

func (v Version) String() string {
	return strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor) + "." + strconv.Itoa(v.Patch)
}
