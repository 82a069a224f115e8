package install

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/mholt/archives"
)

// ContentError says a source delivered bytes that are not the pinned binary: a wrong hash,
// a missing or wrong-typed member, an unreadable archive. It is an attack or a bad manifest,
// so no other source is tried and no fallback is taken.
type ContentError struct{ Err error }

func (e *ContentError) Error() string { return e.Err.Error() }
func (e *ContentError) Unwrap() error { return e.Err }

func contentErrorf(format string, args ...any) error {
	return &ContentError{fmt.Errorf(format, args...)}
}

// peekSize is how much of a stream is looked at to tell its format: enough for a tar
// header with a PAX extension in front of it.
const peekSize = 8 << 10

// archiveFormat tells an archive's format from its first bytes, trying a fixed list in a
// fixed order. archives.Identify is not used: it tries every registered format in map
// order, including brotli, which "matches" by trial decoding, and 7z and rar, which
// bwrapkit has no reason to parse.
func archiveFormat(ctx context.Context, head []byte) (archives.Extractor, error) {
	matches := func(format archives.Format) bool {
		result, err := format.Match(ctx, "", bytes.NewReader(head))
		return err == nil && result.ByStream
	}
	if matches(archives.Zip{}) {
		return archives.Zip{}, nil
	}
	for _, compression := range []archives.Compression{archives.Gz{}, archives.Xz{}, archives.Zstd{}} {
		if matches(compression) {
			// A compressed stream must hold a tar: the tar reader fails loudly if not.
			return archives.CompressedArchive{Archival: archives.Tar{}, Extraction: archives.Tar{}, Compression: compression}, nil
		}
	}
	if matches(archives.Tar{}) {
		return archives.Tar{}, nil
	}
	return nil, contentErrorf("not a tar, tar.gz, tar.xz, tar.zst or zip archive (starts with % x)", head[:min(len(head), 8)])
}

// extraction copies one member of an archive (or the whole stream when member is "")
// into out, writing at most limit+1 bytes so an oversized member fails without filling
// the disk.
type extraction struct {
	member string
	out    io.Writer
	limit  int64
	// spool makes the temp file a zip is copied to: zip needs random access. It is
	// removed when the extraction ends.
	spool      func() (*os.File, error)
	spoolLimit int64
}

// run reads stream and returns how many bytes of the member were written.
func (x extraction) run(ctx context.Context, stream io.Reader) (int64, error) {
	if x.member == "" {
		return x.copyMember(stream)
	}
	buffered := bufio.NewReaderSize(stream, peekSize)
	head, err := buffered.Peek(peekSize)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	if len(head) == 0 {
		return 0, contentErrorf("empty download")
	}
	format, err := archiveFormat(ctx, head)
	if err != nil {
		return 0, err
	}
	var archive io.Reader = buffered
	if _, isZip := format.(archives.Zip); isZip {
		spooled, err := x.spoolZip(buffered)
		if err != nil {
			return 0, err
		}
		defer func() {
			spooled.Close()
			os.Remove(spooled.Name())
		}()
		archive = spooled
	}

	var written int64
	found := false
	err = format.Extract(ctx, archive, func(_ context.Context, entry archives.FileInfo) error {
		if path.Clean(entry.NameInArchive) != path.Clean(x.member) {
			return nil
		}
		// The first entry of that name decides: the pin makes any later duplicate moot.
		found = true
		if err := regularMember(entry); err != nil {
			return err
		}
		file, err := entry.Open()
		if err != nil {
			return err
		}
		defer file.Close()
		written, err = x.copyMember(file)
		if err != nil {
			return err
		}
		return fs.SkipAll
	})
	if err != nil {
		var content *ContentError
		var local *LocalError
		if !errors.As(err, &content) && !errors.As(err, &local) && ctx.Err() == nil {
			// The archive's own structure is broken (or the stream under it failed, which
			// the caller tells apart by the stream's read error).
			err = &ContentError{fmt.Errorf("reading archive: %w", err)}
		}
		return 0, err
	}
	if !found {
		return 0, contentErrorf("archive has no member %q", x.member)
	}
	return written, nil
}

// regularMember refuses everything but a plain file: a link or directory named like the
// member is never followed, only reported.
func regularMember(entry archives.FileInfo) error {
	name := entry.NameInArchive
	if header, isTar := entry.Header.(*tar.Header); isTar {
		switch header.Typeflag {
		case tar.TypeReg, tar.TypeRegA:
		case tar.TypeLink:
			return contentErrorf("member %q is a hard link to %q, not a regular file", name, header.Linkname)
		case tar.TypeSymlink:
			return contentErrorf("member %q is a symbolic link to %q, not a regular file", name, header.Linkname)
		case tar.TypeDir:
			return contentErrorf("member %q is a directory, not a regular file", name)
		default:
			return contentErrorf("member %q is tar type %q, not a regular file", name, header.Typeflag)
		}
	}
	mode := entry.Mode()
	switch {
	case mode&fs.ModeSymlink != 0 || entry.LinkTarget != "":
		return contentErrorf("member %q is a link to %q, not a regular file", name, entry.LinkTarget)
	case mode.IsDir():
		return contentErrorf("member %q is a directory, not a regular file", name)
	case !mode.IsRegular():
		return contentErrorf("member %q has mode %s, not a regular file", name, mode)
	}
	return nil
}

// copyMember writes at most limit+1 bytes: one more than the pin is enough to know the
// member is too large.
func (x extraction) copyMember(member io.Reader) (int64, error) {
	written, err := io.Copy(localWriter{x.out}, io.LimitReader(member, x.limit+1))
	if err != nil {
		return written, err
	}
	if written > x.limit {
		return written, contentErrorf("member is larger than the pinned %d bytes", x.limit)
	}
	return written, nil
}

func (x extraction) spoolZip(stream io.Reader) (*os.File, error) {
	spooled, err := x.spool()
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*os.File, error) {
		spooled.Close()
		os.Remove(spooled.Name())
		return nil, err
	}
	copied, err := io.Copy(localWriter{spooled}, io.LimitReader(stream, x.spoolLimit+1))
	if err != nil {
		return fail(err)
	}
	if copied > x.spoolLimit {
		return fail(contentErrorf("zip archive is larger than %d bytes", x.spoolLimit))
	}
	if _, err := spooled.Seek(0, io.SeekStart); err != nil {
		return fail(&LocalError{err})
	}
	return spooled, nil
}

// localWriter marks write failures as this host's (a full disk), so they are not taken for
// a bad source.
type localWriter struct{ out io.Writer }

func (w localWriter) Write(p []byte) (int, error) {
	n, err := w.out.Write(p)
	if err != nil {
		err = &LocalError{err}
	}
	return n, err
}
