package sandbox

import (
	"path/filepath"
	"strings"

	"github.com/bwrapkit/bwrapkit/home"
)

// A transactional run's upper layer lives beside the project HOMEs, in the caller's
// cache, one directory per project:
//
//	${XDG_CACHE_HOME:-~/.cache}/bwrapkit/layers/<workdir's name>-<sha256 of the workdir>/run-ID
//
// private to the caller (0700) and trusted state like the HOMEs (no workdir or --rw
// may reach it). When it shares the project's file system each accepted file lands in
// one rename; otherwise it is copied (still atomically, by a temporary name).

const layersDirName = "layers"

func layerRoots(env []string) []string {
	var roots []string
	for _, home := range home.Roots(env) {
		roots = append(roots, filepath.Join(filepath.Dir(home), layersDirName))
	}
	return roots
}

// plannedLayers is where projectLayers will look first, without making anything ("" with
// no cache directory): what a previewed policy shows.
func plannedLayers(env []string, workdir string) string {
	roots := layerRoots(env)
	if len(roots) == 0 {
		return ""
	}
	return filepath.Join(resolveExisting(roots[0]), home.ProjectName(workdir))
}

// projectLayers makes (or finds) the project's layer directory, or says why not.
func projectLayers(env []string, workdir string, guard reachGuard) (string, string) {
	roots := layerRoots(env)
	if len(roots) == 0 {
		return "", "there is no cache directory for the command's upper layer (set XDG_CACHE_HOME or HOME)"
	}
	var tried []string
	for _, root := range roots {
		dir := filepath.Join(root, home.ProjectName(workdir))
		if err := home.MakeDirs(root, dir); err != nil {
			tried = append(tried, root+": "+err.Error())
			continue
		}
		if err := home.ProvePrivate(dir); err != nil {
			tried = append(tried, err.Error())
			continue
		}
		if err := refuseWritable("layers", dir, dir, guard); err != nil {
			tried = append(tried, err.Error())
			continue
		}
		return dir, ""
	}
	return "", "no private directory for the command's upper layer (" + strings.Join(tried, "; ") + ")"
}
