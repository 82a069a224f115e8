package sandbox

// CacheLayer is one of the caller's own tool caches (Go's module or build cache, npm's,
// pip's) shown inside as the read-only lower layer of an overlay whose upper layer is the
// project's own: the command starts warm, what it adds lands in the project's layer, and
// the caller's cache never changes. Needs a bwrap with --overlay (0.11.0 and later).
type CacheLayer struct {
	Name  string // go-mod, go-build, npm, pip
	Lower string // the caller's cache on the host
	Upper string // the project's layer on the host, outside the HOME (no sandbox reaches it)
	Work  string // overlayfs's work directory, beside Upper
	// EnvName, when set, is the variable that points the tool at Dest inside (Go's
	// GOMODCACHE, for a module cache shown at its own path).
	EnvName string
	Dest    string // where the tool looks inside: the same place under the project HOME, or Lower itself (Go's module cache)
}

// cacheArgs mounts each layer after the HOME's bind, so it lands on top of it. A bwrap
// without overlays gets none: the caches then start cold in the HOME, as before.
func (policy Policy) cacheArgs() []string {
	if !policy.Features.Has("overlay") {
		return nil
	}
	var argv []string
	for _, layer := range policy.Caches {
		argv = append(argv, "--overlay-src", layer.Lower, "--overlay", layer.Upper, layer.Work, layer.Dest)
	}
	return argv
}

// cacheEnv points the tools at layers shown elsewhere than their default, only where the
// layers are mounted (a bwrap without overlays shows none, and the variable would send
// the tool to a path that does not exist inside).
func (policy Policy) cacheEnv() []string {
	if !policy.Features.Has("overlay") {
		return nil
	}
	var env []string
	for _, layer := range policy.Caches {
		if layer.EnvName != "" {
			env = append(env, layer.EnvName+"="+layer.Dest)
		}
	}
	return env
}
