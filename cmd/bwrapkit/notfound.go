package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The words the CLI says about a command that did not start (126 or 127) and about a
// run that fell back to the direct workdir mode: what a person reads, so the CLI's, not
// the library's (sandbox classifies; Result.Failure and Result.ModeFallback say what).

// hostLookPath finds name on the caller's PATH (hostPath), as a hint for a 127: the
// first executable regular file, or "".
func hostLookPath(name, hostPath string) string {
	if name == "" || strings.Contains(name, "/") {
		return ""
	}
	for _, dir := range filepath.SplitList(hostPath) {
		if !filepath.IsAbs(dir) {
			continue
		}
		candidate := filepath.Join(dir, name)
		if info, err := os.Stat(candidate); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			return candidate
		}
	}
	return ""
}

// notFoundMessage explains a 127: the inside PATH, and where the host has the command
// with the flag that adds it.
func notFoundMessage(command, insidePath, hostHas string) string {
	if strings.Contains(command, "/") {
		return fmt.Sprintf("%s: not found inside the sandbox; bind its directory with --ro or --path", command)
	}
	message := fmt.Sprintf("%s: not found inside the sandbox (PATH=%s)", command, insidePath)
	if hostHas == "" {
		return message + "; it is not on your PATH either"
	}
	return message + fmt.Sprintf("; the host has %s: add --path %s", hostHas, filepath.Dir(hostHas))
}

// hiddenLinkMessage explains a 127 whose cause is a link to a hidden file, naming the
// directory to bind: the link target's installation prefix (the parent of its bin/),
// since an interpreter needs its libraries beside its binary.
func hiddenLinkMessage(command, link, target string) string {
	prefix := filepath.Dir(target)
	if filepath.Base(prefix) == "bin" {
		prefix = filepath.Dir(prefix)
	}
	return fmt.Sprintf("%s: not found inside the sandbox: %s is a link to %s, which the sandbox does not show; bind it with --ro %s", command, link, target, prefix)
}

// fallbackWarning is the one line a default run prints when it falls back to direct.
func fallbackWarning(cause string) string {
	return "workdir mode direct (writes reach the project live, unvetted): " + cause + "; `bwrapkit install` gives a bwrap with the transactional mode"
}
