package version

import "testing"

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string // "" when it must not parse
	}{
		{"0.8.0", "0.8.0"},
		{"0.12.0", "0.12.0"},
		{"10.0.3", "10.0.3"},
		{"00.012.0", "0.12.0"},
		{"0.11.0.1", ""},
		{"0.11", ""},
		{"1", ""},
		{"v0.12.0", ""},
		{"0.13.0-rc1", ""},
		{"0.12.0 ", ""},
		{" 0.12.0", ""},
		{"0..0", ""},
		{"+1.2.3", ""},
		{"1.2.3456789012", ""},
		{"", ""},
	} {
		v, ok := Parse(tc.text)
		got := ""
		if ok {
			got = v.String()
		}
		if got != tc.want {
			t.Errorf("Parse(%q) = %q, %v; want %q", tc.text, got, ok, tc.want)
		}
	}
}

func TestLess(t *testing.T) {
	ordered := []string{"0.4.0", "0.4.1", "0.6.3", "0.10.0", "0.11.2", "0.12.0", "1.0.0", "1.0.10"}
	for i, a := range ordered {
		for j, b := range ordered {
			if got, want := MustParse(a).Less(MustParse(b)), i < j; got != want {
				t.Errorf("%s < %s = %v, want %v", a, b, got, want)
			}
		}
	}
}

func TestMustParsePanicsOnMalformed(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustParse(\"0.12\") did not panic")
		}
	}()
	MustParse("0.12")
}
