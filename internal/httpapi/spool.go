package httpapi

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/spool"
)

// spoolFile is an upload copied to a temporary file, for a parser that
// needs random access (an .xlsx is a zip) or a body read in full before the
// database transaction opens. Its spool folder also holds the parser's own
// temporary files; Remove deletes it all and must run on every path (a
// crash leaves the folder to spool.Sweep).
type spoolFile struct {
	folder *spool.Folder
	Path   string
	Size   int64
}

// spoolUpload copies r into a new file in a spool folder under dir ("": the
// system's temporary directory), at most maxBytes: more is a too_large
// *ingest.Error, and nothing stays on disk on any error.
func spoolUpload(dir string, r io.Reader, maxBytes int64) (*spoolFile, error) {
	folder, err := spool.New(dir)
	if err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	sp := &spoolFile{folder: folder, Path: filepath.Join(folder.Path, "upload")}
	f, err := os.OpenFile(sp.Path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		sp.Remove()
		return nil, fmt.Errorf("httpapi: spool file: %w", err)
	}
	sp.Size, err = io.Copy(f, io.LimitReader(r, maxBytes+1))
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("httpapi: spool file: %w", cerr)
	}
	if err == nil && sp.Size > maxBytes {
		err = &ingest.Error{Code: ingest.CodeTooLarge, Message: fmt.Sprintf("the upload is larger than %d bytes", maxBytes)}
	}
	if err != nil {
		sp.Remove()
		var be *bodyError
		var ie *ingest.Error
		if !errors.As(err, &be) && !errors.As(err, &ie) {
			err = fmt.Errorf("httpapi: spooling the upload: %w", err)
		}
		return nil, err
	}
	return sp, nil
}

// Remove deletes the spooled file and whatever else its folder holds.
func (sp *spoolFile) Remove() {
	if sp != nil {
		sp.folder.Remove()
	}
}

// TmpDir is where a parser of the spooled file may put temporary files.
func (sp *spoolFile) TmpDir() string { return sp.folder.Path }

// spooled reads a spool from its start; close closes and removes it.
type spooled struct {
	*os.File
	sp *spoolFile
}

func openSpool(sp *spoolFile) (*spooled, error) {
	f, err := os.Open(sp.Path)
	if err != nil {
		return nil, fmt.Errorf("httpapi: open the spooled upload: %w", err)
	}
	return &spooled{File: f, sp: sp}, nil
}

func (s *spooled) close() {
	_ = s.File.Close()
	s.sp.Remove()
}
