package main

import (
	"os"
	"path/filepath"
)

// projectRoot is the workdir a run without --workdir gets: the nearest directory at or
// above start (resolved, absolute) that holds a .git entry (a directory, or the gitfile
// of a worktree or submodule), else start itself. As codex and srt do: `go test` started
// in a package directory then still sees the module's go.mod, and the repository's own
// .git is the one protected. The walk stops below each of stops (the caller's home
// directories): a home that is itself a repository (dotfiles kept in git) is never taken
// as a project, since it holds every other project and the caller's secrets; a start at
// or outside a stop walks up to / as usual.
func projectRoot(start string, stops []string, holdsGit func(dir string) bool) string {
	for dir := start; ; dir = filepath.Dir(dir) {
		for _, stop := range stops {
			if dir == stop && dir != start {
				return start
			}
		}
		if holdsGit(dir) && !(dir == "/" && dir != start) {
			return dir
		}
		if dir == "/" {
			return start
		}
	}
}

// holdsGit: dir has a .git directory or regular file (never a link: a link planted at
// .git could make any directory look like a project root).
func holdsGit(dir string) bool {
	info, err := os.Lstat(filepath.Join(dir, ".git"))
	return err == nil && (info.IsDir() || info.Mode().IsRegular())
}

// discoverWorkdir is projectRoot for the current directory, or "" when the current
// directory cannot be resolved (NewPolicy then names that cause itself).
func discoverWorkdir(getenv func(string) string) string {
	here, err := os.Getwd()
	if err != nil {
		return ""
	}
	real, err := filepath.EvalSymlinks(here)
	if err != nil {
		return ""
	}
	var stops []string
	if home := getenv("HOME"); filepath.IsAbs(home) {
		if resolved, err := filepath.EvalSymlinks(home); err == nil {
			stops = append(stops, resolved)
		}
	}
	return projectRoot(real, stops, holdsGit)
}
