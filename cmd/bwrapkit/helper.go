package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// helperName is the lean binary a run starts as its keeper and its network bridge
// (cmd/bwrapkit-helper), looked for beside bwrapkit's own binary.
const helperName = "bwrapkit-helper"

// ownPrograms are the programs of bwrapkit's own a run uses: self, bwrapkit's binary as
// the kernel names it (guarded or trusted by the policy); helper, what the run starts as
// its keeper and its bridge: bwrapkit-helper beside self where it is fit to run, else self
// itself, re-executed (resolved: the bridge is bound into the sandbox by that path); and
// guard, bwrapkit-helper's path beside self whether it is there and fit or not: a run must
// never let its command put one there that the next run would start on the host.
type ownPrograms struct {
	self, helper, guard string
}

// findPrograms finds self and its helper, once per run (the policy's guard and the launch
// must agree). A helper that is there but unfit is passed over for self, which can do all
// it does: the run is slower, not weaker. A self that no longer resolves (bwrapkit's file
// deleted since it started) is its own helper by the name it started under, so starting
// the keeper fails and the run is refused. (A file replaced at that name, an upgrade, is
// started as the keeper; it must then confirm the keeper's protocol, or the run is
// refused: see sandbox/lifetime.)
func findPrograms() (ownPrograms, error) {
	self, err := os.Executable()
	if err != nil {
		return ownPrograms{}, err
	}
	programs := ownPrograms{self: self, helper: self}
	real, err := filepath.EvalSymlinks(self)
	if err != nil {
		return programs, nil
	}
	dir := filepath.Dir(real)
	programs.helper, programs.guard = real, filepath.Join(dir, helperName)
	var own, parent, its unix.Stat_t
	if unix.Stat(real, &own) == nil && unix.Stat(dir, &parent) == nil && unix.Lstat(programs.guard, &its) == nil && helperFits(own, parent, its) == nil {
		programs.helper = programs.guard
	}
	return programs, nil
}

// programsPresent: the program a run starts as its keeper and bridge is there to start.
// A bwrapkit whose file was deleted since it started (an upgrade removed it) is refused
// here, before anything runs, with the cause, rather than by whichever start fails first.
func programsPresent(programs ownPrograms) error {
	if programs.helper == "" {
		return errors.New("bwrapkit cannot find its own binary (the kernel names it in /proc/self/exe), which a run starts as its keeper")
	}
	if _, err := os.Stat(programs.helper); err != nil {
		return fmt.Errorf("%s, which a run starts as its keeper and network bridge, is gone (bwrapkit's file deleted since it started?): %w; run bwrapkit again", programs.helper, err)
	}
	return nil
}

// helperFits decides whether bwrapkit-helper may stand in for bwrapkit (own is bwrapkit's
// binary, dir the directory both lie in): a regular file, not a link (which could lead
// anywhere), executable by its owner, owned by root or by bwrapkit's own owner, and
// writable by nobody else, in a directory nobody else can write either (in a shared one,
// /tmp say, another user could put a hard link to some root-owned program there). It runs
// on the host as the run's keeper: whoever could replace it could run code there, so it
// must be exactly as safe from others as bwrapkit itself.
func helperFits(own, dir, helper unix.Stat_t) error {
	switch {
	case dir.Uid != 0 && dir.Uid != own.Uid:
		return fmt.Errorf("its directory is owned by uid %d, neither root nor bwrapkit's owner (uid %d)", dir.Uid, own.Uid)
	case dir.Mode&0o022 != 0:
		return fmt.Errorf("its directory is writable by its group or by others (mode %04o)", dir.Mode&0o7777)
	case helper.Mode&unix.S_IFMT != unix.S_IFREG:
		return errors.New("not a regular file")
	case helper.Mode&0o100 == 0:
		return errors.New("not executable")
	case helper.Uid != 0 && helper.Uid != own.Uid:
		return fmt.Errorf("owned by uid %d, neither root nor bwrapkit's owner (uid %d)", helper.Uid, own.Uid)
	case helper.Mode&0o022 != 0:
		return fmt.Errorf("writable by its group or by others (mode %04o)", helper.Mode&0o7777)
	}
	return nil
}
