package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bwrapkit/bwrapkit/home"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// parseCacheMode reads --cache (policy "cache"): host (the default) or none.
func parseCacheMode(mode string) (bool, error) {
	switch mode {
	case "", "host":
		return true, nil
	case "none":
		return false, nil
	}
	return false, usagef("--cache %s: want host (your Go, npm and pip caches as read-only lower layers of the project's) or none", mode)
}

// layerCaches puts the caller's own caches under the project HOME's: only for a
// project HOME (not --home-dir or the ephemeral one), only with a bwrap that has
// --overlay, and only caches that are real directories of the caller's that may be shown
// (never one that is or encloses the home directory, never one reached through a link).
func layerCaches(opts *runOptions, policy sandbox.Policy) ([]sandbox.CacheLayer, error) {
	host, err := parseCacheMode(opts.request.Cache)
	if err != nil || !host || opts.request.HomeDir != "" || policy.Home == "" || !policy.Features.Has("overlay") {
		return nil, err
	}
	var layers []sandbox.CacheLayer
	callerHome := opts.Getenv("HOME")
	if real, err := filepath.EvalSymlinks(callerHome); err == nil {
		callerHome = real
	}
	for _, cache := range home.HostCaches(opts.Getenv, callerHome) {
		real, err := filepath.EvalSymlinks(cache.Host)
		if err != nil || real != cache.Host || !home.Usable(real) || encloses(real, callerHome) || sandbox.RefuseReadOnly("--cache", real, real) != nil || sandbox.RefuseCacheLower(real, opts.Getenv) != nil {
			continue
		}
		upper, work, err := home.Layer(policy.Home, cache.Name)
		if err != nil {
			return nil, fmt.Errorf("the project's layer over %s: %w", real, err)
		}
		dest, envName := filepath.Join(policy.Home, cache.Inside), ""
		if cache.SamePath {
			if encloses(policy.Workdir, real) || encloses(real, policy.Workdir) || slices.ContainsFunc(policy.Env, func(entry string) bool { return strings.HasPrefix(entry, cache.EnvName+"=") }) {
				continue // it would cover (or lie in) the project, or --env chose another
			}
			dest, envName = real, cache.EnvName
		}
		layers = append(layers, sandbox.CacheLayer{Name: cache.Name, Lower: real, Upper: upper, Work: work, Dest: dest, EnvName: envName})
	}
	return layers, nil
}

// encloses: dir is path or one of its ancestors.
func encloses(dir, path string) bool {
	return dir == path || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/") || dir == "/"
}
