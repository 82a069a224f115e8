package sandbox

import (
	"slices"
	"testing"
)

// TestTheGateChecksTheBindsTheArgvMakes: the argv and the gate's expectations are both
// read from one resolved run, so every bind the argv makes is one the gate looks at, in
// the same order and with the same kind (read-only, or a pinned mount point), and the
// gate looks at nothing the argv does not bind. Were either to derive its binds from the
// policy on its own again, a bind added to one only would go unverified.
func TestTheGateChecksTheBindsTheArgvMakes(t *testing.T) {
	policy := Policy{Workdir: "/src/app", Host: mergedUsrHost, Features: withDisableUserns,
		Home: "/home/ada/.cache/bwrapkit/home/app-0", ReadWrite: []string{"/srv/out"},
		ReadOnly: []string{"/opt/sdk", "/src/app/vendor"}, Protect: []string{"/src/app/.git", "/src/app/a/b/.env"}}
	run := resolve(policy)
	argv := build("/usr/bin/bwrap", run, []string{"true"}, layout{seccompFD: ArgvSeccompFD})
	type mount struct {
		option, path string
	}
	var bound []mount
	for i := 0; i+2 < len(argv); i++ {
		if (argv[i] == "--bind" || argv[i] == "--ro-bind") && argv[i+1] == argv[i+2] && argv[i+1] != "/usr" &&
			!slices.Contains(policy.Host.Etc, argv[i+1]) && !slices.Contains(policy.Host.Proc.ReadOnly, argv[i+1]) {
			bound = append(bound, mount{argv[i], argv[i+1]})
		}
	}
	expected := expectations(run, map[string]source{})
	var checked []mount
	for _, want := range expected {
		option := "--bind"
		if want.readOnly {
			option = "--ro-bind"
		}
		checked = append(checked, mount{option, want.path})
	}
	if len(bound) < 7 {
		t.Fatalf("precondition: the policy's binds reach the argv (workdir, HOME, --rw, two --ro, two protected, their pinned parents): %v", bound)
	}
	if !slices.Equal(bound, checked) {
		t.Errorf("the argv binds\n %v\nthe gate checks\n %v", bound, checked)
	}
}

// TestAncestorsUnderAWritableBindArePinned: a protected path's parents are pinned unless
// the bind mounted last over them is read-only. An --ro path that holds the workdir is
// under the workdir's own writable bind, and an --rw inside an --ro lies on top of it:
// neither covers anything (with --ro of the project's parent, a command renamed a
// submodule's directory away and planted its own .git in its place).
func TestAncestorsUnderAWritableBindArePinned(t *testing.T) {
	binds := []bind{{"--ro-bind", "/srv"}, {"--bind", "/srv/p"}, {"--ro-bind", "/srv/p/ro"}, {"--bind", "/srv/p/ro/rw"}}
	got := protectAncestors("/srv/p", []string{"/srv/p/s/.git", "/srv/p/ro/x/.git", "/srv/p/ro/rw/y/.git"}, binds)
	want := []string{"/srv/p/s", "/srv/p/ro/rw", "/srv/p/ro/rw/y"}
	if !slices.Equal(got, want) {
		t.Errorf("pinned %v, want %v", got, want)
	}
}
