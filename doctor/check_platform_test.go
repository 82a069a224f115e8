package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwrapkit/bwrapkit/internal/livetest"
	"github.com/bwrapkit/bwrapkit/platform"
)

// TestPlatformDetail: the platform check shows the facts the diagnosis orders causes by, and
// says which of them could not be read; gVisor's mount table is left out, as it proves nothing.
func TestPlatformDetail(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		want    []string
		never   []string
	}{
		{"docker-ubuntu2404", []string{"AppArmor label: docker-default (enforce)", "seccomp: filter, 1 filters",
			"proc: no proc mount is fully visible; hidden under /proc: /proc/bus", "runtime: docker", "  /.dockerenv exists"}, nil},
		{"lxd-nesting", []string{"proc: /dev/.lxc/proc is fully visible, so the masks on /proc", "runtime: lxd"}, nil},
		{"userns-not-built", []string{"user namespaces in the kernel build: not-built (/proc/self/ns has no user entry)"}, nil},
		{"gvisor", []string{"emulation: gvisor", "AppArmor label: none (AppArmor is not enabled)"}, []string{"proc:"}},
		{"crostini", []string{"proc: unknown (/proc/self/mountinfo is missing)", "runtime: crostini"}, nil},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			root := filepath.Join(livetest.RepoRoot(), "testdata", "platform", tc.fixture)
			host := platform.Detect(os.DirFS(root), func(string) string { return "" }, "linux", "amd64")
			detail := platformDetail(host)
			for _, want := range tc.want {
				if !strings.Contains(detail, want) {
					t.Errorf("detail lacks %q:\n%s", want, detail)
				}
			}
			for _, unwanted := range tc.never {
				if strings.Contains(detail, unwanted) {
					t.Errorf("detail holds %q:\n%s", unwanted, detail)
				}
			}
		})
	}
}
