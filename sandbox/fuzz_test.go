package sandbox

import (
	"errors"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/home"
)

// FuzzPolicyFile: whatever a policy file holds, parsing and resolving it (as a preview,
// which makes nothing on the host) never panics; what is refused is refused as a
// *PolicyError or a *home.Error, and what is accepted builds an argv or is refused by
// Argv as a *PolicyError, with no NUL in any environment entry it would hand bwrap.
// Seeded with the bad inputs once accepted or garbled. CI runs it for a bounded time
// (make fuzz).
func FuzzPolicyFile(f *testing.F) {
	for _, seed := range []string{
		`{"schema":"bwrapkit.policy/v1"}`,
		`{"schema":"bwrapkit.policy/v1","env":["A=b\u0000c"]}`,
		`{"schema":"bwrapkit.policy/v1","ro":["/usr"],"ro":["/opt"]}`,
		`{"schema":"bwrapkit.policy/v1","net":true,"NET":false}`,
		`{"schema":"bwrapkit.policy/v1","ro":["."]}`,
		`{"schema":"bwrapkit.policy/v1","report":"/tmp"}`,
		`{"schema":"bwrapkit.policy/v1","report":"` + strings.Repeat("r", 300) + `"}`,
		`{"schema":"bwrapkit.policy/v1","workdir":"/","rw":["/etc"]}`,
		`{"schema":"bwrapkit.policy/v1","limit":["nproc=0","tmpfs=1T"],"timeout":"-1s"}`,
		`{"schema":"bwrapkit.policy/v1","protect":["../x"],"cwd":"/abs","git":"write"}`,
		`{"schema":"bwrapkit.policy/v1","path":["/usr/bin:/bin"],"pass_env":["A=B"]}`,
		`[]`, ``, `{"schema":"bwrapkit.policy/v1"}{}`,
	} {
		f.Add([]byte(seed))
	}
	workdir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ParsePolicyFile(data)
		if err != nil {
			var policyErr *PolicyError
			if !errors.As(err, &policyErr) {
				t.Fatalf("a refused policy file is not a *PolicyError: %T %v", err, err)
			}
			return
		}
		request := file.Request
		if request.Workdir == "" {
			request.Workdir = workdir
		}
		request.Preview = true
		policy, err := NewPolicy(request, []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin"})
		if err != nil {
			var policyErr *PolicyError
			var homeErr *home.Error
			if !errors.As(err, &policyErr) && !errors.As(err, &homeErr) {
				t.Fatalf("a refused request is neither a *PolicyError nor a *home.Error: %T %v", err, err)
			}
			return
		}
		if policy.hasValidSeal() {
			t.Fatal("a previewed policy is sealed: Run would accept it")
		}
		argv, err := Argv("/usr/bin/bwrap", policy, []string{"true"})
		if err != nil {
			var policyErr *PolicyError
			if !errors.As(err, &policyErr) {
				t.Fatalf("Argv refused a resolved policy without a *PolicyError: %T %v", err, err)
			}
			return
		}
		for _, arg := range argv {
			if strings.ContainsRune(arg, 0) {
				t.Fatalf("an argument with a NUL would reach bwrap: %q", arg)
			}
		}
	})
}
