package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/sandbox/limits"
)

// TestSealCoversEveryField changes each field of a sealed policy in turn (found by
// reflection, so a field added tomorrow is in this test too) and wants the seal broken,
// except by Features, which Run probes itself. It also keeps Policy free of kinds whose
// %#v is an address rather than content: a change behind a pointer would keep the seal.
func TestSealCoversEveryField(t *testing.T) {
	checkSealableKinds(t, reflect.TypeOf(Policy{}), "Policy")
	base := Policy{Workdir: "/src/app", ReadOnly: []string{"/opt/go"}, Env: []string{"A=1"}, Host: Host{Etc: []string{"/etc/hosts"}}}.sealed()
	if !base.hasValidSeal() {
		t.Fatal("a freshly sealed policy does not pass its own check")
	}
	policyType := reflect.TypeOf(base)
	for i := 0; i < policyType.NumField(); i++ {
		field := policyType.Field(i)
		if !field.IsExported() {
			continue
		}
		changed := base
		value := reflect.ValueOf(&changed).Elem().Field(i)
		if !mutate(value) {
			t.Errorf("Policy.%s: this test cannot change a %s; teach mutate how", field.Name, field.Type)
			continue
		}
		if field.Name == "Features" {
			if !changed.hasValidSeal() {
				t.Errorf("changing Features broke the seal; Run probes them itself, so callers may set them")
			}
			continue
		}
		if changed.hasValidSeal() {
			t.Errorf("changing Policy.%s kept the seal: Run would trust a policy NewPolicy never built", field.Name)
		}
	}
	if (Policy{Workdir: "/src/app"}).hasValidSeal() {
		t.Error("a hand-written policy passes as sealed")
	}
}

func checkSealableKinds(t *testing.T, typ reflect.Type, path string) {
	t.Helper()
	switch typ.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
		t.Errorf("%s is a %s: its %%#v shows an address, not content, so the seal could not see a change behind it", path, typ.Kind())
	case reflect.Struct:
		for i := 0; i < typ.NumField(); i++ {
			checkSealableKinds(t, typ.Field(i).Type, path+"."+typ.Field(i).Name)
		}
	case reflect.Slice, reflect.Array:
		checkSealableKinds(t, typ.Elem(), path+"[]")
	case reflect.Map:
		checkSealableKinds(t, typ.Key(), path+"[key]")
		checkSealableKinds(t, typ.Elem(), path+"[value]")
	}
}

// mutate changes value in place to something else of its type, or reports it cannot.
func mutate(value reflect.Value) bool {
	switch value.Kind() {
	case reflect.String:
		value.SetString(value.String() + "x")
	case reflect.Bool:
		value.SetBool(!value.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		value.SetInt(value.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		value.SetUint(value.Uint() + 1)
	case reflect.Slice:
		value.Set(reflect.Append(value, reflect.Zero(value.Type().Elem())))
	case reflect.Map:
		fresh := reflect.MakeMap(value.Type())
		fresh.SetMapIndex(reflect.Zero(value.Type().Key()), reflect.Zero(value.Type().Elem()))
		value.Set(fresh)
	case reflect.Struct:
		if value.Type() == reflect.TypeOf(limits.Limits{}) {
			bounds, err := limits.Parse([]string{"nproc=7"}, limits.Defaults())
			if err != nil {
				return false
			}
			value.Set(reflect.ValueOf(bounds))
			return true
		}
		for i := 0; i < value.NumField(); i++ {
			if value.Type().Field(i).IsExported() && mutate(value.Field(i)) {
				return true
			}
		}
		return false
	default:
		return false
	}
	return true
}

// TestRunRefusesAPolicyNewPolicyDidNotBuild: as root a hand-written Policy{Workdir: w}
// would otherwise start with no read-only /proc/sys and a writable .git; and a policy
// NewPolicy built, with its .git protection dropped afterwards, would run too. Both are
// refused before bwrap runs, and the command never runs. Changing Features only is
// allowed (the CLI and the doctor set them), and that run must start: otherwise this
// test would pass on a Run that refuses everything.
func TestRunRefusesAPolicyNewPolicyDidNotBuild(t *testing.T) {
	bwrap := livetest.SystemBwrap(t)
	workdir := t.TempDir()
	if err := os.Mkdir(filepath.Join(workdir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(workdir, "ran")
	command := []string{"/usr/bin/touch", marker}
	built, err := NewPolicy(Request{Workdir: workdir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(built.Protect) == 0 {
		t.Fatalf("precondition: NewPolicy protects .git, got Protect %v", built.Protect)
	}
	unprotected := built
	unprotected.Protect = nil
	for name, policy := range map[string]Policy{
		"hand-written":           {Workdir: workdir},
		"protection removed":     unprotected,
		"hand-written with host": {Workdir: workdir, Host: built.Host, Limits: built.Limits},
	} {
		_, err := Run(context.Background(), policy, command, Options{Bwrap: bwrap})
		var unavailable *UnavailableError
		if !errors.As(err, &unavailable) || unavailable.Reason != ReasonInvalidPolicy || !errors.Is(err, errUnsealed) {
			t.Errorf("%s: want ReasonInvalidPolicy (not from NewPolicy), got %v", name, err)
		}
		if _, statErr := os.Stat(marker); statErr == nil {
			t.Fatalf("%s: the command ran", name)
		}
	}
	withFeatures := built
	withFeatures.Features = Features{Options: map[string]bool{}} // wrong on purpose: Run probes itself
	result, err := Run(context.Background(), withFeatures, command, Options{Bwrap: bwrap})
	if err != nil || !result.Started || result.ExitCode != 0 {
		t.Fatalf("a sealed policy with Features set must run: %+v %v", result, err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the sealed run did not run the command: %v", err)
	}
}

// BenchmarkSealCheck is what the seal costs Run: one check of a policy NewPolicy built
// for a real workdir (the host's layout, limits and all).
func BenchmarkSealCheck(b *testing.B) {
	policy, err := NewPolicy(Request{Workdir: b.TempDir()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for range b.N {
		if !policy.hasValidSeal() {
			b.Fatal("not sealed")
		}
	}
}
