package platform

import "strings"

// Kinds of block a profile file nests.
const (
	blockTarget = iota // the profile attached to the bwrap path
	blockOther         // another top-level profile
	blockChild         // a child profile or hat: it confines other processes, not bwrap
	blockPlain         // anything else, e.g. a conditional
)

// profileGrantsUserns scans one profile file. Rules end at ',' and blocks at '{' and '}',
// but commas and braces inside parentheses, quotes and globs (/{**,}, @{HOME}) are text, and
// a line end closes a statement such as `include <tunables/global>` that has no comma.
func profileGrantsUserns(text, bwrapPath string) bool {
	var blocks []int
	var statement strings.Builder
	var parens, globs int
	quoted := false
	inScope := func() bool {
		if len(blocks) == 0 || blocks[0] != blockTarget {
			return false
		}
		for _, kind := range blocks {
			if kind == blockChild {
				return false
			}
		}
		return true
	}
	for _, line := range strings.Split(text, "\n") {
		line = stripComment(line)
		for i := 0; i < len(line); i++ {
			c := line[i]
			switch {
			case c == '"':
				quoted = !quoted
			case quoted:
			case c == '(':
				parens++
			case c == ')' && parens > 0:
				parens--
			case parens > 0:
			case c == '{' && !opensBlock(line[:i]):
				globs++
			case c == '}' && globs > 0:
				globs--
			case globs > 0:
			case c == '{':
				blocks = append(blocks, blockKind(statement.String(), bwrapPath, len(blocks) == 0))
				statement.Reset()
				continue
			case c == '}':
				if len(blocks) > 0 {
					blocks = blocks[:len(blocks)-1]
				}
				statement.Reset()
				continue
			case c == ',':
				if inScope() && isUsernsRule(statement.String()) {
					return true
				}
				statement.Reset()
				continue
			}
			statement.WriteByte(c)
		}
		if parens == 0 && globs == 0 && !quoted {
			statement.Reset()
		} else {
			statement.WriteByte(' ')
		}
	}
	return false
}

// stripComment drops a '#' comment. `#include` is an old include directive, but includes are
// not followed here, so dropping it changes nothing.
func stripComment(line string) string {
	quoted := false
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '"':
			quoted = !quoted
		case line[i] == '#' && !quoted && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// opensBlock tells a block's '{' (after a space, a ')' or alone) from a glob's or a
// variable's (after '/', '@' or a name character).
func opensBlock(before string) bool {
	if before == "" {
		return true
	}
	switch before[len(before)-1] {
	case ' ', '\t', ')', '"':
		return true
	}
	return false
}

// blockKind classifies the block a header opens.
func blockKind(header, bwrapPath string, topLevel bool) int {
	fields := dropIncludes(splitFields(header))
	if len(fields) == 0 {
		return blockPlain
	}
	if !topLevel {
		if fields[0] == "profile" || fields[0] == "hat" || strings.HasPrefix(fields[0], "^") {
			return blockChild
		}
		return blockPlain
	}
	if attachment(fields) == bwrapPath {
		return blockTarget
	}
	return blockOther
}

// dropIncludes removes `include [if exists] <file>` in front of a header, which a line end
// would have ended had the profile not been written on one line.
func dropIncludes(fields []string) []string {
	for len(fields) > 0 && fields[0] == "include" {
		next := 1
		for next < len(fields) && (fields[next] == "if" || fields[next] == "exists") {
			next++
		}
		fields = fields[min(next+1, len(fields)):]
	}
	return fields
}

// attachment returns the path a profile header attaches to: `profile NAME /path ...`,
// `profile /path ...` or `/path ...`; "" when it attaches to none.
func attachment(fields []string) string {
	if fields[0] != "profile" {
		if strings.HasPrefix(fields[0], "/") {
			return fields[0]
		}
		return ""
	}
	if len(fields) > 2 && strings.HasPrefix(fields[2], "/") {
		return fields[2]
	}
	if len(fields) > 1 && strings.HasPrefix(fields[1], "/") {
		return fields[1]
	}
	return ""
}

// splitFields splits on blanks, keeping a double-quoted field whole and unquoted, since a
// quoted path may hold spaces.
func splitFields(text string) []string {
	var fields []string
	var field strings.Builder
	quoted, inField := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '"':
			quoted, inField = !quoted, true
		case !quoted && (c == ' ' || c == '\t'):
			if inField {
				fields = append(fields, field.String())
				field.Reset()
				inField = false
			}
		default:
			field.WriteByte(c)
			inField = true
		}
	}
	if inField {
		fields = append(fields, field.String())
	}
	return fields
}

// isUsernsRule recognises `userns`, `userns create` and `allow`/`audit`-qualified forms;
// a `deny` qualifier makes it the opposite of a grant.
func isUsernsRule(rule string) bool {
	fields := strings.Fields(rule)
	for len(fields) > 0 && (fields[0] == "audit" || fields[0] == "allow" || fields[0] == "quiet" ||
		strings.HasPrefix(fields[0], "priority=")) {
		fields = fields[1:]
	}
	switch len(fields) {
	case 1:
		return fields[0] == "userns"
	case 2:
		return fields[0] == "userns" && fields[1] == "create"
	}
	return false
}
