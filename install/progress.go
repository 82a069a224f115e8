package install

import "io"

// Progress is told what an install is doing, so the caller can show it.
type Progress interface {
	// Note is one line of plain progress, such as "downloading URL".
	Note(message string)
	// Transfer starts metering a download of total bytes (-1 when unknown); each chunk
	// read is written to the returned writer, which is closed when the download ends.
	Transfer(url string, total int64) io.WriteCloser
}

type silent struct{}

func (silent) Note(string)                           {}
func (silent) Transfer(string, int64) io.WriteCloser { return nopCloser{io.Discard} }

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
