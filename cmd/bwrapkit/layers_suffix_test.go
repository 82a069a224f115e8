package main

import (
	"testing"

	"github.com/bwrapkit/bwrapkit/home"
	"github.com/bwrapkit/bwrapkit/sandbox"
)

// TestCacheLayersLiveWhereTheSandboxLooks: the home package makes a project's cache
// layers where sandbox.WithCaches accepts them; two names for one place must agree.
func TestCacheLayersLiveWhereTheSandboxLooks(t *testing.T) {
	if home.LayersSuffix != sandbox.CacheLayersSuffix {
		t.Errorf("home makes layers in HOME%s, the sandbox accepts them in HOME%s", home.LayersSuffix, sandbox.CacheLayersSuffix)
	}
}
