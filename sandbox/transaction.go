package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bwrapkit/bwrapkit/sandbox/gitmeta"
	"github.com/bwrapkit/bwrapkit/sandbox/land"
)

// A transactional run: the layer made before launch, the landing after the sandbox is
// gone. Run drives it; the rules are package land's.
type transaction struct {
	policy    Policy
	layer     *land.Layer
	project   *os.File // the workdir, held open from before launch to the landing
	started   time.Time
	abandoned []land.AbandonedLayer
	landed    land.Outcome
	landErr   error
}

// Refusal is one change a transactional run did not land, and the rule that refused it.
type Refusal struct {
	Path string `json:"path"`
	Rule string `json:"rule"`
}

// LandError is a transactional run whose changes could not be vetted or landed in
// whole: the command ran (Result holds its status); what did not land is kept in the
// quarantine the message names, and every project file is either old or new.
type LandError struct{ Err error }

func (e *LandError) Error() string { return "landing the command's changes: " + e.Err.Error() }
func (e *LandError) Unwrap() error { return e.Err }

func kernelRelease() string {
	var name unix.Utsname
	if unix.Uname(&name) != nil {
		return ""
	}
	return unix.ByteSliceToString(name.Release[:])
}

func layerProblem(policy Policy) string {
	if policy.LayerRoot != "" {
		return ""
	}
	if policy.NoLayer != "" {
		return policy.NoLayer
	}
	return "no directory for the command's upper layer was resolved (NewPolicy makes it)"
}

// RefuseSelfInsideDirect: live writes cannot protect the binary the next run executes,
// so a direct run refuses a workdir that holds bwrapkit itself (a transactional run
// guards it instead). The policy file needs no such rule: inside the workdir it is read
// only as committed (TrustPolicyFile).
func (policy Policy) RefuseSelfInsideDirect() error {
	if policy.SelfInside == "" {
		return nil
	}
	return &PolicyError{"workdir", policy.Workdir, fmt.Sprintf("holds %s, bwrapkit itself, which a command could replace while the project is bound live (direct mode); keep it outside the workdir, or run transactionally (bwrapkit install gives a bwrap that can)", policy.SelfInside)}
}

func beginTransaction(policy Policy) (*transaction, error) {
	fd, err := unix.Open(policy.Workdir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the workdir to land in it later: %w", err)
	}
	project := os.NewFile(uintptr(fd), policy.Workdir)
	abandoned, err := land.Abandoned(policy.LayerRoot, fd, policy.KeepAbandoned)
	if err != nil {
		project.Close()
		return nil, fmt.Errorf("looking for abandoned layers in %s: %w", policy.LayerRoot, err)
	}
	layer, err := land.NewLayer(policy.LayerRoot)
	if err != nil {
		project.Close()
		return nil, err
	}
	// The overlay's top takes the upper directory's mode: give it the project's, or the
	// command would see (and the landing apply) the layer's private 0700.
	var stat unix.Stat_t
	if err := unix.Fstat(fd, &stat); err != nil || os.Chmod(layer.Upper, os.FileMode(stat.Mode&0o777)) != nil {
		layer.Discard()
		project.Close()
		return nil, fmt.Errorf("giving the upper layer the workdir's mode: %v", err)
	}
	// A little before launch: a host change at the very start counts as a conflict.
	return &transaction{policy: policy, layer: layer, project: project, started: time.Now().Add(-time.Millisecond), abandoned: abandoned}, nil
}

func (t *transaction) abort() {
	if t == nil {
		return
	}
	_ = t.layer.Discard()
	t.project.Close()
}

// finish lands the layer of a run that started and ended on its own (its exit status,
// a signal, a timeout all count); a run that never started or was interrupted lands
// nothing: its layer is discarded or, if anything was written, kept as a quarantine.
func (t *transaction) finish(ctx context.Context, result Result, runErr error) error {
	defer t.project.Close()
	var unavailable *UnavailableError
	if !result.Started || errors.As(runErr, &unavailable) {
		return t.layer.Discard()
	}
	if runErr != nil || result.TimedOut {
		cause := "the run was interrupted"
		if result.TimedOut {
			cause = "the command timed out"
		}
		kept, err := t.layer.Quarantine(nil, "not landed: "+cause)
		t.landed.Quarantine = kept
		return err
	}
	bounds := land.DefaultBounds()
	if t.policy.LandMaxEntries > 0 {
		bounds.Entries = t.policy.LandMaxEntries
	}
	t.landed, t.landErr = land.Land(t.layer, int(t.project.Fd()), land.Options{
		MakeRules: t.rules,
		Bounds:    bounds,
		Verify:    t.verifyGit,
		Chown:     os.Geteuid() == 0,
		Interrupt: ctx.Done(),
	})
	if t.landErr != nil {
		return &LandError{Err: t.landErr}
	}
	return nil
}

func (t *transaction) rules() land.Rules {
	var guarded []string
	for _, path := range append(append([]string(nil), t.policy.Guarded...), t.policy.Protect...) {
		rel, err := filepath.Rel(t.policy.Workdir, path)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		rel = filepath.ToSlash(rel)
		if rel == ".git" || strings.HasPrefix(rel, ".git/") {
			continue // .git has rules of its own (readonly, or a commit's write set)
		}
		guarded = append(guarded, rel)
	}
	workdir := t.policy.Workdir
	lowerHas := func(dir, name string) bool {
		// The project as it is on the host: a plain lstat, the answer only widens refusals.
		_, err := os.Lstat(filepath.Join(workdir, filepath.FromSlash(dir), name))
		return err == nil
	}
	return land.Rules{GitCommit: t.policy.Git == GitCommit, Guarded: guarded, CallerGid: uint32(os.Getegid()), StartedNS: t.started.UnixNano(), LowerHas: lowerHas,
		CurrentBranch: gitmeta.CurrentBranch(workdir), Packed: gitmeta.PackedRefs(filepath.Join(t.layer.Upper, ".git", "packed-refs"))}
}

func (t *transaction) outcome() (land.Changes, []Refusal, string) {
	var refused []Refusal
	for _, decision := range t.landed.Refused {
		path := decision.Entry.Path
		if path == "" {
			path = "."
		}
		refused = append(refused, Refusal{Path: path, Rule: string(decision.Rule)})
	}
	return t.landed.Changes, refused, t.landed.Quarantine
}
