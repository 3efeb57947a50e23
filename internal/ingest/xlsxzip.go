package ingest

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// A workbook is a zip, and a zip can say anything about itself: tiny parts
// that unzip to gigabytes, sizes in its headers that are lies, a million
// entries. Every part's header is checked before anything is unzipped, and
// only the parts reading one sheet needs are ever unzipped, each streamed
// from the spooled file and stopped at the size its header told: nothing
// but the shared strings is written to disk (xlsxsst.go), and no part is
// held whole in memory.

// Bounds of a workbook's zip that do not depend on the upload's limits.
const (
	// xlsxMaxEntries caps the parts of a workbook (a sheet takes two or
	// three: a workbook of a thousand sheets is far below).
	xlsxMaxEntries = 10_000
	// xlsxMaxDirectory caps the zip's central directory, in bytes, checked
	// before archive/zip reads it (it keeps about 250 bytes per entry).
	xlsxMaxDirectory = 4 << 20
	// xlsxMaxPart caps a part read for its list (the relationships, the
	// workbook): those are read as a stream, keeping only the names of
	// sheets and relationships, but a list of a workbook needs no more.
	xlsxMaxPart = 8 << 20
	// xlsxMaxRatio caps how many times its zipped size any part unzips to,
	// whatever its size: a sheet or shared strings of real data unzips to
	// 5-30 times its size, a small XML part to 2-10; deflate's own ceiling
	// is about 1032.
	xlsxMaxRatio = 200
	// xlsxZipSlack is what deflate may add to incompressible data beyond
	// its size (5 bytes a 64 KiB block, and a few more): a part zipped to
	// more than its told size and this is a lie about its size.
	xlsxZipSlack = 1024
)

// xlsxUnzipLimit bounds what a workbook's parts, all of them, may unzip to
// by their headers; xlsxMaxRun how long a run of XML without a tag may be
// (one cell's text, its entities escaped, or one tag's attributes).
func xlsxUnzipLimit(lim Limits) int64 { return 16 * lim.MaxBytes }
func xlsxMaxRun(lim Limits) int64     { return 6*int64(lim.MaxCellBytes) + 4096 }

// xlsxParts are a workbook's parts by their normalised names (what
// partName makes of them), every header checked (checkXLSXParts).
type xlsxParts map[string]*zip.File

// partName is a part's name as parts are found: case insensitive, with
// backslashes read as slashes, without a leading slash.
func partName(name string) string {
	return strings.TrimPrefix(strings.ToLower(strings.ReplaceAll(name, "\\", "/")), "/")
}

// checkXLSXParts checks the headers of every part of the zip, before any is
// unzipped, and indexes them by name:
//
//   - at most xlsxMaxEntries parts, no name twice;
//   - all of them unzip to at most xlsxUnzipLimit, as their headers say;
//   - no part unzips to more than xlsxMaxRatio times its zipped size,
//     whatever its size;
//   - no part is zipped to more than its told size and xlsxZipSlack
//     (stored: exactly its size), a header that lies about the size.
//
// What a read part truly unzips to is checked as it is read (openPart).
// A refusal names the part.
func checkXLSXParts(zr *zip.Reader, lim Limits) (xlsxParts, error) {
	if len(zr.File) > xlsxMaxEntries {
		return nil, tooLarge("the workbook has %d parts; at most %d are read: save it as CSV, or split it", len(zr.File), xlsxMaxEntries)
	}
	parts := make(xlsxParts, len(zr.File))
	var total uint64
	for _, zf := range zr.File {
		size, zipped := zf.UncompressedSize64, zf.CompressedSize64
		if total += size; total > uint64(xlsxUnzipLimit(lim)) || total < size {
			return nil, tooLarge("the workbook unzips to more than %s in all (at the part %s): save it as CSV, or split it",
				sizeString(xlsxUnzipLimit(lim)), clip(zf.Name))
		}
		if size/xlsxMaxRatio > zipped || size > 0 && zipped == 0 {
			return nil, tooLarge("the part %s of the workbook unzips to %d times its size (%s from %s); at most %d times is read: it is not a workbook of a list",
				clip(zf.Name), size/max(zipped, 1), sizeString(int64(min(size, 1<<62))), sizeString(int64(min(zipped, 1<<62))), xlsxMaxRatio)
		}
		if zf.Method == zip.Store && zipped != size || zipped > size+size/1000+xlsxZipSlack {
			return nil, tooLarge("the part %s of the workbook is zipped to %s while its header says it unzips to %s: it is not a workbook of a list",
				clip(zf.Name), sizeString(int64(min(zipped, 1<<62))), sizeString(int64(min(size, 1<<62))))
		}
		n := partName(zf.Name)
		if _, dup := parts[n]; dup {
			return nil, &Error{Code: CodeMalformedXLSX, Message: "the workbook cannot be read", Details: []FieldError{{
				Message: fmt.Sprintf("the part %s appears twice in the zip", clip(zf.Name))}}}
		}
		parts[n] = zf
	}
	return parts, nil
}

// openPart unzips a part as a stream: never more than its header says (a
// part that unzips to more, or fewer, is refused naming it when that is
// read), and, with maxRun > 0, never a run of XML without a tag longer
// than maxRun (a cell far over the limit, which an XML decoder would hold
// whole).
func openPart(zf *zip.File, maxRun int64, lim Limits) (io.ReadCloser, error) {
	rc, err := zf.Open()
	if err != nil {
		return nil, unreadablePart(zf, err)
	}
	p := &partReader{zf: zf, rc: rc, left: int64(min(zf.UncompressedSize64, 1<<62)), lim: lim}
	p.scan.maxRun = maxRun
	if maxRun <= 0 {
		p.scan.maxRun = math.MaxInt64
	}
	return p, nil
}

// partReader is a part being unzipped (openPart).
type partReader struct {
	zf   *zip.File
	rc   io.ReadCloser
	left int64 // what the header says is still to come
	scan xmlScan
	lim  Limits
	err  error
}

func (p *partReader) Read(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	// One byte past the told size is asked for, to see a part that goes on.
	n, err := p.rc.Read(b[:min(int64(len(b)), p.left+1)])
	p.left -= int64(n)
	switch {
	case p.left < 0 || errors.Is(err, zip.ErrFormat):
		p.err = tooLarge("the part %s of the workbook unzips to more than its header says (%d bytes): it is not a workbook of a list",
			clip(p.zf.Name), p.zf.UncompressedSize64)
	case (err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF)) && p.left > 0:
		p.err = &Error{Code: CodeMalformedXLSX, Message: "the workbook cannot be read", Details: []FieldError{{Message: fmt.Sprintf(
			"the part %s unzips to %d bytes, fewer than its header says (%d)", clip(p.zf.Name), p.zf.UncompressedSize64-uint64(p.left), p.zf.UncompressedSize64)}}}
	case err != nil && err != io.EOF:
		p.err = unreadablePart(p.zf, err)
	}
	if p.err == nil && n > 0 {
		if _, werr := p.scan.Write(b[:n]); werr != nil {
			p.err = &Error{Code: CodeInvalidRows, Message: "a cell is too large", Details: []FieldError{{Message: fmt.Sprintf(
				"%s holds a run of more than %d bytes without a tag: a cell far over the limit of %d bytes", clip(p.zf.Name), p.scan.maxRun, p.lim.MaxCellBytes)}}}
		}
	}
	if p.err != nil {
		return 0, p.err
	}
	return n, err
}

func (p *partReader) Close() error { return p.rc.Close() }

func unreadablePart(zf *zip.File, err error) error {
	return &Error{Code: CodeMalformedXLSX, Message: "the workbook cannot be read", Details: []FieldError{{
		Message: clip(fmt.Sprintf("the part %s: %v", zf.Name, err))}}}
}

// checkZipDirectory bounds the central directory of the zip in path before
// archive/zip reads it: archive/zip reads entries from where the directory
// starts to the end of the file, whatever count the zip declares, and keeps
// each. It finds the end record as archive/zip does; where it finds none,
// archive/zip will refuse the file itself.
func checkZipDirectory(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("ingest: the workbook: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("ingest: the workbook: %w", err)
	}
	size := fi.Size()
	const endLen, loc64Len, end64Len = 22, 20, 56
	var (
		buf    []byte
		endOff int64 = -1
	)
	for _, n := range []int64{1024, 65 * 1024} {
		n = min(n, size)
		buf = make([]byte, n)
		if _, err := f.ReadAt(buf, size-n); err != nil && err != io.EOF {
			return fmt.Errorf("ingest: the workbook: %w", err)
		}
		if p := findEndRecord(buf, endLen); p >= 0 {
			buf, endOff = buf[p:], size-n+int64(p)
			break
		}
		if n == size {
			break
		}
	}
	if endOff < 0 || len(buf) < endLen {
		return nil
	}
	le := binary.LittleEndian
	records, dirSize, dirOff := uint64(le.Uint16(buf[10:])), uint64(le.Uint32(buf[12:])), uint64(le.Uint32(buf[16:]))
	if records == 0xffff || dirSize == 0xffff || dirOff == 0xffffffff {
		loc := make([]byte, loc64Len)
		if endOff >= loc64Len {
			if _, err := f.ReadAt(loc, endOff-loc64Len); err == nil && le.Uint32(loc) == 0x07064b50 {
				end := make([]byte, end64Len)
				p := int64(le.Uint64(loc[8:]))
				if _, err := f.ReadAt(end, p); err != nil || le.Uint32(end) != 0x06064b50 {
					return nil
				}
				endOff, dirSize, dirOff = p, le.Uint64(end[40:]), le.Uint64(end[48:])
			}
		}
	}
	// The directory starts at its offset, or where its size puts it before
	// the end record: bound the bytes from the earlier of the two.
	start := int64(min(dirOff, 1<<62))
	if dirSize <= uint64(endOff) {
		start = min(start, endOff-int64(dirSize))
	}
	if start >= 0 && size-start > xlsxMaxDirectory {
		return tooLarge("the workbook's zip directory is %s; at most %s is read (%d parts): save it as CSV, or split it",
			sizeString(size-start), sizeString(xlsxMaxDirectory), xlsxMaxEntries)
	}
	return nil
}

// findEndRecord is the offset in b of the zip's end record: the last
// signature whose comment fits in b, as archive/zip finds it; -1 for none.
func findEndRecord(b []byte, endLen int) int {
	sig := []byte{'P', 'K', 5, 6}
	for i := len(b) - endLen; i >= 0; i-- {
		if bytes.Equal(b[i:i+4], sig) {
			if n := int(binary.LittleEndian.Uint16(b[i+endLen-2:])); n+endLen+i > len(b) {
				return -1
			}
			return i
		}
	}
	return -1
}
