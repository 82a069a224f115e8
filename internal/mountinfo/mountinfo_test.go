package mountinfo

import "testing"

func TestUnescape(t *testing.T) {
	for field, want := range map[string]string{
		"/sys/fs/cgroup":     "/sys/fs/cgroup",
		`/mnt/a\040b`:        "/mnt/a b",
		`/x\011y\012z`:       "/x\ty\nz",
		`/back\134slash`:     `/back\slash`,
		`/two\040\040spaces`: "/two  spaces",
		`/not\999octal`:      `/not\999octal`, // not an escape the kernel writes: kept
		`/short\04`:          `/short\04`,
		`\040lead`:           " lead",
		"":                   "",
	} {
		if got := Unescape(field); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", field, got, want)
		}
	}
}

func BenchmarkUnescapePlain(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		_ = Unescape("/sys/fs/cgroup/memory")
	}
}
