// Package doctor says whether this host can sandbox with bwrap, why not, and what to do:
// it owns the checks and their runner (Run, Spec, the check list); the vocabulary, the
// diagnosis, the remedies, the self-tests, the probe, the renderers and --fix are its
// subpackages (see README.md for the map).
package doctor
