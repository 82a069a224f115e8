package install

import (
	"strings"
	"testing"
)

func TestWithMirror(t *testing.T) {
	artifact := Artifact{Version: "0.12.0", Arch: "amd64", SHA256: goodSHA, Size: 1, Sources: []Source{
		{URL: "https://github.com/bwrapkit/bwrapkit/releases/download/bwrap-0.12.0/bwrap-0.12.0-linux-amd64.tar.gz", Member: "bwrap"},
		{URL: "file:///srv/old/bwrap-0.12.0-linux-amd64", Member: ""},
		{URL: "/opt/cache/bwrap%20copy.tar.xz", Member: "bin/bwrap"},
		{URL: "https://other.example/x/bwrap-0.12.0-linux-amd64.tar.gz?token=1", Member: "bwrap"},
	}}
	for _, tc := range []struct {
		mirror  string
		want    []string // URLs; members are unchanged
		wantErr string
	}{
		{
			mirror: "https://mirror.internal/bwrap/",
			want: []string{
				"https://mirror.internal/bwrap/bwrap-0.12.0-linux-amd64.tar.gz",
				"https://mirror.internal/bwrap/bwrap-0.12.0-linux-amd64",
				"https://mirror.internal/bwrap/bwrap%20copy.tar.xz",
			},
		},
		{
			mirror: "http://127.0.0.1:9000",
			want: []string{
				"http://127.0.0.1:9000/bwrap-0.12.0-linux-amd64.tar.gz",
				"http://127.0.0.1:9000/bwrap-0.12.0-linux-amd64",
				"http://127.0.0.1:9000/bwrap%20copy.tar.xz",
			},
		},
		{
			mirror: "/srv/mirror",
			want: []string{
				"/srv/mirror/bwrap-0.12.0-linux-amd64.tar.gz",
				"/srv/mirror/bwrap-0.12.0-linux-amd64",
				"/srv/mirror/bwrap copy.tar.xz",
			},
		},
		{
			mirror: "file:///srv/mirror/",
			want: []string{
				"file:///srv/mirror/bwrap-0.12.0-linux-amd64.tar.gz",
				"file:///srv/mirror/bwrap-0.12.0-linux-amd64",
				"file:///srv/mirror/bwrap%20copy.tar.xz",
			},
		},
		{mirror: "ftp://mirror/", wantErr: `scheme "ftp"`},
		{mirror: "mirror/dir", wantErr: "neither a URL nor an absolute path"},
		{mirror: "https://mirror/?a=b", wantErr: "query string"},
	} {
		t.Run(tc.mirror, func(t *testing.T) {
			mirrored, err := artifact.WithMirror(tc.mirror)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("WithMirror(%q) error = %v, want %q", tc.mirror, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var urls []string
			for i, source := range mirrored.Sources {
				urls = append(urls, source.URL)
				if want := artifact.Sources[i].Member; source.Member != want {
					t.Errorf("source %d member = %q, want %q", i, source.Member, want)
				}
			}
			// The fourth source has the first one's file name and member: it collapses.
			if strings.Join(urls, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("WithMirror(%q) =\n%s\nwant\n%s", tc.mirror, strings.Join(urls, "\n"), strings.Join(tc.want, "\n"))
			}
			if mirrored.SHA256 != artifact.SHA256 || mirrored.Size != artifact.Size {
				t.Error("a mirror must not change the pin")
			}
			if err := mirrored.validate(); err != nil {
				t.Errorf("mirrored artifact is invalid: %v", err)
			}
		})
	}
	if artifact.Sources[0].URL != "https://github.com/bwrapkit/bwrapkit/releases/download/bwrap-0.12.0/bwrap-0.12.0-linux-amd64.tar.gz" {
		t.Error("WithMirror modified its receiver's sources")
	}
}
