package land

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bwrapkit/bwrapkit/internal/layerdir"
	"golang.org/x/sys/unix"
)

// These land real layers (directories made here, as overlayfs leaves them) in real
// projects, and judge by the project afterwards.

func fixture(t testing.TB) (layer *Layer, project string, projectFD int) {
	t.Helper()
	base := t.TempDir()
	project = filepath.Join(base, "project")
	root := filepath.Join(base, "layers", "project") // as <caller's layers>/<project>
	for _, dir := range []string{project, root} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	layer, err := NewLayer(root)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(project, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	os.Chmod(layer.Upper, 0o755)
	return layer, project, fd
}

func write(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLandNeverFollowsALinkInTheProject: the project holds `out -> <outside>`; the
// layer replaced it with a directory holding a file. The file lands in a new directory
// at out; the outside directory is untouched.
func TestLandNeverFollowsALinkInTheProject(t *testing.T) {
	layer, project, fd := fixture(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(project, "out")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(layer.Upper, "out", "f"), "inside\n")
	outcome, err := Land(layer, fd, Options{Rules: Rules{CallerGid: uint32(os.Getegid()), StartedNS: 1 << 62}})
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("landing wrote through the project's link: %v", entries)
	}
	if info, err := os.Lstat(filepath.Join(project, "out")); err != nil || !info.IsDir() {
		t.Errorf("out is not the layer's directory: %v %v", info, err)
	}
	if got, _ := os.ReadFile(filepath.Join(project, "out", "f")); string(got) != "inside\n" {
		t.Errorf("out/f = %q", got)
	}
	if outcome.Changes.Added != 1 {
		t.Errorf("changes %+v", outcome.Changes)
	}
}

// TestLandTooManyEntriesLandsNothing: a layer over the bounds is refused whole, the
// project untouched, the layer kept and named.
func TestLandTooManyEntriesLandsNothing(t *testing.T) {
	layer, project, fd := fixture(t)
	write(t, filepath.Join(project, "keep"), "old\n")
	write(t, filepath.Join(layer.Upper, "keep"), "new\n")
	for i := range 50 {
		write(t, filepath.Join(layer.Upper, fmt.Sprintf("f%03d", i)), "")
	}
	outcome, err := Land(layer, fd, Options{Bounds: Bounds{Entries: 20, Depth: 10}, Rules: Rules{StartedNS: 1 << 62}})
	var layerErr *LayerError
	var bounds *BoundsError
	if !errors.As(err, &layerErr) || !errors.As(err, &bounds) {
		t.Fatalf("err = %v, want a LayerError over the bounds", err)
	}
	if got, _ := os.ReadFile(filepath.Join(project, "keep")); string(got) != "old\n" {
		t.Errorf("keep = %q: a partial landing", got)
	}
	if entries, _ := os.ReadDir(project); len(entries) != 1 {
		t.Errorf("the project holds %d entries, want 1", len(entries))
	}
	if _, err := os.Stat(filepath.Join(outcome.Quarantine, "upper", "keep")); err != nil {
		t.Errorf("the layer was not kept: %v", err)
	}
}

// TestLandTooDeepLandsNothing: a tree deeper than the bounds.
func TestLandTooDeepLandsNothing(t *testing.T) {
	layer, project, fd := fixture(t)
	deep := layer.Upper
	for range 30 {
		deep = filepath.Join(deep, "d")
	}
	write(t, filepath.Join(deep, "f"), "x")
	_, err := Land(layer, fd, Options{Bounds: Bounds{Entries: 1000, Depth: 10}, Rules: Rules{StartedNS: 1 << 62}})
	var bounds *BoundsError
	if !errors.As(err, &bounds) {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(project); len(entries) != 0 {
		t.Errorf("something landed: %v", entries)
	}
}

// BenchmarkLand10000Files: a run that made 10,000 files in a new directory, landed on
// the same file system.
func BenchmarkLand10000Files(b *testing.B) {
	for range b.N {
		b.StopTimer()
		layer, _, fd := fixture(b)
		for i := range 10_000 {
			write(b, filepath.Join(layer.Upper, "gen", fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d", i)), "x")
		}
		b.StartTimer()
		outcome, err := Land(layer, fd, Options{Rules: Rules{CallerGid: uint32(os.Getegid()), StartedNS: 1 << 62}})
		if err != nil || outcome.Changes.Added != 10_000 {
			b.Fatalf("%+v %v", outcome.Changes, err)
		}
	}
}

// BenchmarkLand10000FilesSpread: the same 10,000 files in directories that already
// exist, so each lands by a rename of its own.
func BenchmarkLand10000FilesSpread(b *testing.B) {
	for range b.N {
		b.StopTimer()
		layer, project, fd := fixture(b)
		for d := range 100 {
			os.MkdirAll(filepath.Join(project, fmt.Sprintf("d%02d", d)), 0o755)
		}
		for i := range 10_000 {
			write(b, filepath.Join(layer.Upper, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d", i)), "x")
		}
		b.StartTimer()
		outcome, err := Land(layer, fd, Options{Rules: Rules{CallerGid: uint32(os.Getegid()), StartedNS: 1 << 62}})
		if err != nil || outcome.Changes.Added != 10_000 {
			b.Fatalf("%+v %v", outcome.Changes, err)
		}
	}
}

// TestAbandonedTakesOnlyUnlockedLayers: a layer whose run is alive (its lock held) is
// never taken for abandoned, even while it is being made; once its holder is gone (the
// lock released, as the kernel does for a killed bwrapkit) the next look removes it,
// overlayfs's 0000 work directory and a directory the command left unlistable included.
func TestAbandonedTakesOnlyUnlockedLayers(t *testing.T) {
	live, _, projectFD := fixture(t)
	root := filepath.Dir(live.Dir)
	dead, err := NewLayer(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(dead.Work, "work"), filepath.Join(dead.Upper, "closed")} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, "inside"), "x")
		if err := os.Chmod(dir, 0); err != nil {
			t.Fatal(err)
		}
	}
	dead.lock.Close() // what the kernel does when the bwrapkit holding it dies
	// Layers being made (new-ID): one just begun and one held are left alone; one a
	// bwrapkit left midway long ago is removed, unreported.
	making, held, stale := filepath.Join(root, newPrefix+"a"), filepath.Join(root, newPrefix+"b"), filepath.Join(root, newPrefix+"c")
	for _, dir := range []string{making, held, stale} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * staleNew)
	for _, dir := range []string{held, stale} {
		if err := os.Chtimes(dir, long, long); err != nil {
			t.Fatal(err)
		}
	}
	holder, err := layerdir.TryLock(held)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	found, err := Abandoned(root, projectFD, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0] != (AbandonedLayer{Dir: dead.Dir}) {
		t.Errorf("abandoned %v, want only %s", found, dead.Dir)
	}
	if _, err := os.Lstat(dead.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the abandoned layer is still there: %v", err)
	}
	if _, err := os.Stat(live.Upper); err != nil {
		t.Errorf("a live run's layer was taken: %v", err)
	}
	for dir, kept := range map[string]bool{making: true, held: true, stale: false} {
		if _, err := os.Lstat(dir); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", filepath.Base(dir), err == nil, kept)
		}
	}
	os.Remove(making)
	os.Remove(held)
	if err := live.Discard(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("left in the layer root: %v", entries)
	}
}

// TestAbandonedMidLandingIsKept: a layer whose bwrapkit died while landing it holds
// what did not land; the next look keeps it as a quarantine saying so, even when the
// caller asked abandoned layers to be removed.
func TestAbandonedMidLandingIsKept(t *testing.T) {
	live, _, projectFD := fixture(t)
	root := filepath.Dir(live.Dir)
	dead, err := NewLayer(root)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dead.Upper, "not-landed"), "x")
	if err := dead.BeginLanding(); err != nil {
		t.Fatal(err)
	}
	dead.lock.Close()
	found, err := Abandoned(root, projectFD, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || !found[0].MidLanding || !strings.HasPrefix(filepath.Base(found[0].Dir), quarantinePrefix) {
		t.Fatalf("abandoned %+v, want one quarantine marked mid-landing", found)
	}
	if data, err := os.ReadFile(filepath.Join(found[0].Dir, "upper", "not-landed")); err != nil || string(data) != "x" {
		t.Errorf("what did not land was not kept: %q %v", data, err)
	}
	if note, _ := os.ReadFile(filepath.Join(found[0].Dir, RefusedList)); !strings.Contains(string(note), "killed while landing") {
		t.Errorf("the quarantine's note does not say the landing was interrupted: %q", note)
	}
	if err := live.Discard(); err != nil {
		t.Fatal(err)
	}
}

// TestLandManyDirectoriesStaysWithinDescriptors: a file in each of 1,600 existing
// directories lands under a descriptor limit of 3,000, which keeping every project and
// layer directory open (3,200) would exceed midway.
func TestLandManyDirectoriesStaysWithinDescriptors(t *testing.T) {
	layer, project, fd := fixture(t)
	const dirs = 1600
	for d := range dirs {
		name := fmt.Sprintf("d%04d", d)
		if err := os.Mkdir(filepath.Join(project, name), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(layer.Upper, name, "f"), "x")
	}
	var limit unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &limit); err != nil {
		t.Fatal(err)
	}
	lowered := limit
	lowered.Cur = 3000
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lowered); err != nil {
		t.Fatal(err)
	}
	outcome, err := Land(layer, fd, Options{Rules: Rules{CallerGid: uint32(os.Getegid()), StartedNS: 1 << 62}})
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &limit); err != nil {
		t.Fatal(err)
	}
	if err != nil || outcome.Changes.Added != dirs {
		t.Fatalf("landed %+v: %v", outcome.Changes, err)
	}
	if _, err := os.Stat(filepath.Join(project, fmt.Sprintf("d%04d", dirs-1), "f")); err != nil {
		t.Error(err)
	}
}

// TestApplyNeverFollowsALinkPlantedAfterTheWalk: between the walk and the landing the
// host (or a process the sandbox left) replaced the project's directory sub with a link
// to another directory of the project. What the layer put in sub/deep must not land
// through the link: a link inside the project stays beneath it, and O_NOFOLLOW guards
// only the last name, so only RESOLVE_NO_SYMLINKS stops it.
func TestApplyNeverFollowsALinkPlantedAfterTheWalk(t *testing.T) {
	layer, project, fd := fixture(t)
	write(t, filepath.Join(layer.Upper, "sub", "deep", "f"), "layer\n")
	if err := os.MkdirAll(filepath.Join(project, "elsewhere", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere", filepath.Join(project, "sub")); err != nil {
		t.Fatal(err)
	}
	upper, err := unix.Open(layer.Upper, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(upper)
	// What the walk saw before the swap: sub and sub/deep directories of the project's,
	// f new in sub/deep.
	lowerDir := Lower{Kind: KindDir, Mode: 0o755}
	decisions := []Decision{
		{Entry: Entry{Path: "sub", Kind: KindDir, Mode: 0o755, Lower: lowerDir}, Action: Skip},
		{Entry: Entry{Path: "sub/deep", Kind: KindDir, Mode: 0o755, Lower: lowerDir}, Action: Skip},
		{Entry: Entry{Path: "sub/deep/f", Kind: KindFile, Mode: 0o644, Nlink: 1, Lower: Lower{Kind: KindAbsent}}, Action: Apply},
	}
	applier := &Applier{Upper: upper, Project: fd}
	if _, err := applier.Apply(decisions); err == nil {
		t.Error("the landing went through the project's link and reported no error")
	}
	if _, err := os.Lstat(filepath.Join(project, "elsewhere", "deep", "f")); err == nil {
		t.Error("sub/deep/f landed at elsewhere/deep/f, through the link")
	}
}

// TestLandLandsNoRefusedEntry: beside a file that lands, one the rules refuse (anyone
// may write it) stays out of the project and is reported.
func TestLandLandsNoRefusedEntry(t *testing.T) {
	layer, project, fd := fixture(t)
	write(t, filepath.Join(layer.Upper, "ok"), "fine\n")
	write(t, filepath.Join(layer.Upper, "open"), "anyone's\n")
	if err := os.Chmod(filepath.Join(layer.Upper, "open"), 0o666); err != nil {
		t.Fatal(err)
	}
	outcome, err := Land(layer, fd, Options{Rules: Rules{CallerGid: uint32(os.Getegid()), StartedNS: 1 << 62}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(project, "ok")); err != nil {
		t.Errorf("the accepted file did not land: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(project, "open")); err == nil {
		t.Error("the world-writable file landed")
	}
	if len(outcome.Refused) != 1 || outcome.Refused[0].Entry.Path != "open" || outcome.Refused[0].Rule != RuleWorldWritable {
		t.Errorf("refused %+v, want open for %s", outcome.Refused, RuleWorldWritable)
	}
}

// TestNewLayerBesideASweep: a sweep (Abandoned, run by every transactional run) never
// takes the lock of a layer being made, even for a moment: NewLayer locks its new-ID
// without waiting, and a sweep that locked first to look at its age refused about one
// run in 300 at 32 at once ("locking the run's layer"). Many layers made while another
// goroutine sweeps the same root: none may fail.
func TestNewLayerBesideASweep(t *testing.T) {
	root := t.TempDir()
	done := make(chan struct{})
	swept := make(chan int)
	go func() {
		sweeps := 0
		for {
			select {
			case <-done:
				swept <- sweeps
				return
			default:
				Abandoned(root, -1, false)
				sweeps++
			}
		}
	}()
	var failed []error
	for range 1500 {
		layer, err := NewLayer(root)
		if err != nil {
			failed = append(failed, err)
			continue
		}
		layer.Discard()
	}
	close(done)
	sweeps := <-swept
	if len(failed) > 0 {
		t.Errorf("%d of 1500 layers made beside %d sweeps failed, first: %v", len(failed), sweeps, failed[0])
	}
}

// TestLandWaitsForTheProjectsOtherLanding: landings of one project go one at a time, each
// decided against the project as the one before left it. A layer with a new directory d
// waits while another landing holds the project; that one makes d meanwhile; this one
// then lands its file into d instead of stopping at "file exists".
func TestLandWaitsForTheProjectsOtherLanding(t *testing.T) {
	layer, project, fd := fixture(t)
	write(t, filepath.Join(layer.Upper, "d", "mine"), "mine\n")
	landed, other := landBehind(t, layer, fd, LandingsLock(layer.Dir))
	write(t, filepath.Join(project, "d", "theirs"), "theirs\n") // the other landing's d
	other()
	if err := <-landed; err != nil {
		t.Fatalf("landing after the other: %v", err)
	}
	for _, name := range []string{"mine", "theirs"} {
		if data, err := os.ReadFile(filepath.Join(project, "d", name)); err != nil || string(data) != name+"\n" {
			t.Errorf("d/%s = %q, %v after both landings", name, data, err)
		}
	}
}

// landBehind takes the landing lock at root, as another landing holds it, and starts
// landing layer: the landing must still be waiting 200 ms later. It returns the
// landing's end and the other landing's release.
func landBehind(t *testing.T, layer *Layer, fd int, root string) (<-chan error, func()) {
	t.Helper()
	other, err := lockLandings(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	landed := make(chan error, 1)
	go func() {
		_, err := Land(layer, fd, Options{Rules: Rules{CallerGid: uint32(os.Getegid()), StartedNS: 1 << 62}})
		landed <- err
	}()
	select {
	case err := <-landed:
		other()
		t.Fatalf("landed while another landing held the lock at %s (%v)", root, err)
	case <-time.After(200 * time.Millisecond):
	}
	return landed, other
}

// TestLandWaitsForAnotherProjectsLanding: projects nest (a run in P, one in P/sub), so a
// landing waits for the caller's landing of any project, not only its own: the lock is
// the caller's layers root, above every project's layers.
func TestLandWaitsForAnotherProjectsLanding(t *testing.T) {
	layer, project, fd := fixture(t)
	write(t, filepath.Join(layer.Upper, "mine"), "mine\n")
	nested := filepath.Join(filepath.Dir(filepath.Dir(layer.Dir)), "project-sub")
	if err := os.Mkdir(nested, 0o700); err != nil {
		t.Fatal(err)
	}
	theirs, err := NewLayer(nested)
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Discard()
	landed, other := landBehind(t, layer, fd, LandingsLock(theirs.Dir))
	other()
	if err := <-landed; err != nil {
		t.Fatalf("landing after the other: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(project, "mine")); err != nil {
		t.Errorf("mine did not land after the other landing: %v", err)
	}
}

// TestLandWaitGivesUpWhenInterrupted: a landing waiting for another of the project stops
// waiting when its caller is interrupted (another run's command decides how long that
// landing copies, and a signal must end a run that waits): nothing lands, the layer is
// kept, and the lock, when it comes, is let go at once.
func TestLandWaitGivesUpWhenInterrupted(t *testing.T) {
	layer, project, fd := fixture(t)
	write(t, filepath.Join(layer.Upper, "mine"), "mine\n")
	root := LandingsLock(layer.Dir)
	other, err := lockLandings(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	interrupt := make(chan struct{})
	landed := make(chan error, 1)
	var outcome Outcome
	go func() {
		var err error
		outcome, err = Land(layer, fd, Options{Rules: Rules{CallerGid: uint32(os.Getegid()), StartedNS: 1 << 62}, Interrupt: interrupt})
		landed <- err
	}()
	time.Sleep(50 * time.Millisecond)
	close(interrupt)
	select {
	case err = <-landed:
	case <-time.After(5 * time.Second):
		other()
		t.Fatal("an interrupted landing went on waiting for the other")
	}
	var layerErr *LayerError
	if !errors.As(err, &layerErr) || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("err = %v, want a LayerError saying it was interrupted", err)
	}
	if _, err := os.Lstat(filepath.Join(project, "mine")); err == nil {
		t.Error("an interrupted landing landed")
	}
	if _, err := os.Lstat(filepath.Join(outcome.Quarantine, "upper", "mine")); err != nil {
		t.Errorf("the layer was not kept (%q): %v", outcome.Quarantine, err)
	}
	other()
	// The waiter got the lock when the other let go, and let it go at once.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		probe, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		free := unix.Flock(probe, unix.LOCK_EX|unix.LOCK_NB) == nil
		unix.Close(probe)
		if free {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the project's landing lock stayed held after an interrupted wait")
		}
	}
}
