package platform

import (
	"io/fs"
	"strings"
)

// appArmorDir is where AppArmor loads profiles from at boot.
const appArmorDir = "etc/apparmor.d"

// AppArmorProfileGrantsUserns looks through the top-level files of /etc/apparmor.d for a
// profile that attaches to exactly bwrapPath and allows creating user namespaces (a
// `userns,` rule, not denied). It returns that file's host path, e.g.
// "/etc/apparmor.d/bwrap-userns-restrict".
//
// AppArmor attaches by the executable's real path, so pass bwrapPath symlink-resolved.
// Attachment globs are not expanded and includes are not followed, so the answer errs
// towards "no profile". A file is evidence, not proof: whether it is loaded only a launch
// shows.
func AppArmorProfileGrantsUserns(root fs.FS, bwrapPath string) (profileFile string, ok bool) {
	entries, err := fs.ReadDir(root, appArmorDir)
	if err != nil {
		return "", false
	}
	disabled := disabledProfiles(root)
	for _, entry := range entries {
		name := entry.Name()
		if entry.IsDir() || disabled[name] || skippedProfileFile(name) {
			continue
		}
		// readRegular also skips symlinks to directories and anything that is not a file.
		data, err := readRegular(root, appArmorDir+"/"+name)
		if err != nil {
			continue
		}
		if profileGrantsUserns(string(data), bwrapPath) {
			return "/" + appArmorDir + "/" + name, true
		}
	}
	return "", false
}

// disabledProfiles lists /etc/apparmor.d/disable: the boot scripts skip a profile that has an
// entry of the same name there (how aa-disable works).
func disabledProfiles(root fs.FS) map[string]bool {
	entries, _ := fs.ReadDir(root, appArmorDir+"/disable")
	disabled := make(map[string]bool, len(entries))
	for _, entry := range entries {
		disabled[entry.Name()] = true
	}
	return disabled
}

// skippedProfileFile mirrors the files AppArmor's boot scripts refuse to load: package
// manager leftovers, editor backups and hidden files are never policy.
func skippedProfileFile(name string) bool {
	if strings.HasPrefix(name, ".") || name == "README" || strings.HasSuffix(name, "~") {
		return true
	}
	for _, suffix := range []string{".rpmnew", ".rpmsave", ".orig", ".rej", ".dpkg-new", ".dpkg-old",
		".dpkg-dist", ".dpkg-bak", ".dpkg-remove", ".pacsave", ".pacnew"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}
