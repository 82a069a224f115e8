package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestBarLine(t *testing.T) {
	for _, tc := range []struct {
		done, total int64
		want        string
	}{
		{0, 10 << 20, "downloading   0% [          ] 0.0 MiB / 10.0 MiB"},
		{5 << 20, 10 << 20, "downloading  50% [=====     ] 5.0 MiB / 10.0 MiB"},
		{10 << 20, 10 << 20, "downloading 100% [==========] 10.0 MiB / 10.0 MiB"},
		// A server that sends more than it announced never overflows the bar.
		{12 << 20, 10 << 20, "downloading 100% [==========] 12.0 MiB / 10.0 MiB"},
		{3 << 20, -1, "downloading 3.0 MiB"},
		{0, 0, "downloading 0.0 MiB"},
	} {
		if got := barLine(tc.done, tc.total, 10); got != tc.want {
			t.Errorf("barLine(%d, %d) = %q, want %q", tc.done, tc.total, got, tc.want)
		}
	}
}

// TestProgressBarEndsWhereTheDownloadStopped: the last drawing is of the bytes that came,
// not of the total, and the line is ended.
func TestProgressBarEndsWhereTheDownloadStopped(t *testing.T) {
	var out bytes.Buffer
	bar := (&installProgress{out: &out, terminal: true}).Transfer("http://mirror/bwrap", 4<<20)
	bar.Write(make([]byte, 1<<20))
	if err := bar.Close(); err != nil {
		t.Fatal(err)
	}
	drawings := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\r")
	if last := drawings[len(drawings)-1]; !strings.Contains(last, " 25% ") || !strings.HasSuffix(out.String(), "\n") {
		t.Errorf("the bar ended as %q (all: %q)", last, out.String())
	}
	out.Reset()
	plain := (&installProgress{out: &out}).Transfer("http://mirror/bwrap", 4<<20)
	plain.Write(make([]byte, 1<<20))
	plain.Close()
	if out.Len() != 0 {
		t.Errorf("a bar on a stderr that is not a terminal: %q", out.String())
	}
}
