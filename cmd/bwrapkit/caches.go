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

// cacheUses are the project layers a run took (home.TakeLayer), released once its
// sandbox is gone.
type cacheUses []*home.LayerUse

func (uses cacheUses) release() {
	for _, use := range uses {
		use.Release()
	}
}

// layerCaches puts the caller's own caches under the project HOME's: only for a
// project HOME (not --home-dir or the ephemeral one), only with a bwrap that has
// --overlay, and only caches that are real directories of the caller's that may be shown
// (never one that is or encloses the home directory, never one reached through a link).
// Release what it returns after the run, failure or not.
func layerCaches(opts *runOptions, policy sandbox.Policy) ([]sandbox.CacheLayer, cacheUses, error) {
	host, err := parseCacheMode(opts.request.Cache)
	if err != nil || !host || opts.request.HomeDir != "" || policy.Home == "" || !policy.Features.Has("overlay") {
		return nil, nil, err
	}
	var layers []sandbox.CacheLayer
	var uses cacheUses
	callerHome := opts.Getenv("HOME")
	if real, err := filepath.EvalSymlinks(callerHome); err == nil {
		callerHome = real
	}
	for _, cache := range home.HostCaches(opts.Getenv, callerHome) {
		real, err := filepath.EvalSymlinks(cache.Host)
		if err != nil || real != cache.Host || !home.Usable(real) || encloses(real, callerHome) || sandbox.RefuseReadOnly("--cache", real, real) != nil || sandbox.RefuseCacheLower(real, opts.Getenv) != nil {
			continue
		}
		dest, envName := filepath.Join(policy.Home, cache.Inside), ""
		if cache.SamePath {
			if encloses(policy.Workdir, real) || encloses(real, policy.Workdir) || slices.ContainsFunc(policy.Env, func(entry string) bool { return strings.HasPrefix(entry, cache.EnvName+"=") }) {
				continue // it would cover (or lie in) the project, or --env chose another
			}
			dest, envName = real, cache.EnvName
		}
		use, err := home.TakeLayer(policy.Home, cache.Name)
		if err != nil {
			uses.release()
			return nil, nil, fmt.Errorf("the project's layer over %s: %w", real, err)
		}
		uses = append(uses, use)
		layers = append(layers, sandbox.CacheLayer{Name: cache.Name, Lower: real, Upper: use.Upper, Work: use.Work, Dest: dest, EnvName: envName})
	}
	return layers, uses, nil
}

// encloses: dir is path or one of its ancestors.
func encloses(dir, path string) bool {
	return dir == path || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/") || dir == "/"
}
