package remedy

import "strings"

// Script is commands as one block to paste, in the shape of dockerd-rootless-setuptool.sh's
// `sudo sh -eux <<EOF ... EOF`: the commands that need root run in one shell that stops at
// the first failure and shows each step; bwrapkit's own commands (an install into the
// user's home) come first, as the user. Every command is one line, so none can end the
// here-document early; the delimiter is quoted, so nothing in it is expanded.
func Script(commands []string) string {
	var user, root []string
	sudo := false
	seen := map[string]bool{}
	for _, command := range commands {
		if seen[command] {
			continue
		}
		seen[command] = true
		switch {
		case strings.HasPrefix(command, "bwrapkit "):
			user = append(user, command)
		case strings.HasPrefix(command, "sudo ") || strings.Contains(command, " | sudo "):
			sudo = true
			command = strings.TrimPrefix(command, "sudo ")
			root = append(root, strings.ReplaceAll(command, " | sudo ", " | "))
		default:
			root = append(root, command)
		}
	}
	var script strings.Builder
	for _, command := range user {
		script.WriteString(command + "\n")
	}
	if len(root) > 0 {
		if sudo {
			script.WriteString("sudo ")
		}
		script.WriteString("sh -eux <<'EOF'\n")
		for _, command := range root {
			script.WriteString(command + "\n")
		}
		script.WriteString("EOF\n")
	}
	return script.String()
}
