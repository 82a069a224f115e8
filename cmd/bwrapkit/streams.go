package main

import (
	"io"
	"os"

	"golang.org/x/term"
)

// streams are a command's standard streams and what it needs to know about them.
type streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// OutIsTerminal and ErrIsTerminal decide colour and progress bars.
	OutIsTerminal bool
	ErrIsTerminal bool
	Getenv        func(string) string
	Environ       func() []string
}

func newStreams() streams {
	return streams{
		In:            os.Stdin,
		Out:           os.Stdout,
		Err:           os.Stderr,
		OutIsTerminal: term.IsTerminal(int(os.Stdout.Fd())),
		ErrIsTerminal: term.IsTerminal(int(os.Stderr.Fd())),
		Getenv:        os.Getenv,
		Environ:       os.Environ,
	}
}
