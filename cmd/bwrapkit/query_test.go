package main

import (
	"testing"

	"github.com/bwrapkit/bwrapkit/locate"
)

// Root's managed install follows the user's own home only when no home was named: a named
// home (--home, BWRAPKIT_HOME) is searched alone, so a test or a user who names one is never
// served another.
func TestQueryAddsRootsInstallOnlyWithoutANamedHome(t *testing.T) {
	cases := []struct {
		name    string
		flag    string
		environ []string
		want    string
	}{
		{name: "default home", environ: []string{"HOME=/home/u"}, want: locate.SystemHome},
		{name: "--home", flag: "/srv/bk", environ: []string{"HOME=/home/u"}, want: ""},
		{name: "BWRAPKIT_HOME", environ: []string{"HOME=/home/u", "BWRAPKIT_HOME=/srv/bk"}, want: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := streams{Getenv: getenvFrom(c.environ)}
			if got := (&globalOptions{Home: c.flag}).query(s).SystemHome; got != c.want {
				t.Errorf("SystemHome %q, want %q", got, c.want)
			}
		})
	}
}
