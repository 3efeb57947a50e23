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
	"path"
	"strings"
)

// A workbook is a zip, and a zip can say anything about itself: tiny parts
// that unzip to gigabytes, sizes in its headers that are lies, a million
// entries. excelize holds every part it does not stream whole in memory,
// so a workbook is checked part by part before excelize sees it, and
// excelize gets a copy holding only the parts that reading rows needs.

// Bounds of a workbook's zip that do not depend on the upload's limits.
const (
	// xlsxMaxEntries caps the parts of a workbook (a sheet takes two or
	// three: a workbook of a thousand sheets is far below).
	xlsxMaxEntries = 10_000
	// xlsxMaxDirectory caps the zip's central directory, in bytes, checked
	// before archive/zip reads it (it keeps about 250 bytes per entry).
	xlsxMaxDirectory = 4 << 20
	// xlsxMaxPart caps a part excelize reads whole into memory: the
	// workbook, its relationships, the content types, a small sheet.
	xlsxMaxPart = 8 << 20
	// xlsxMaxInMemory caps those parts in all.
	xlsxMaxInMemory = 32 << 20
	// xlsxMaxRatio caps how many times its zipped size a part of more than
	// xlsxRatioFloor unzips to. A sheet or shared strings of real data
	// unzips to 5-30 times its size; deflate's own ceiling is about 1032.
	xlsxMaxRatio   = 200
	xlsxRatioFloor = 1 << 20
)

// xlsxXMLInMemory is the largest sheet or shared string table excelize keeps
// in memory; a larger one goes to a temporary file and is read from there.
const xlsxXMLInMemory = 64 << 10

// xlsxPart is what excelize does with a part of a workbook.
type xlsxPart int

const (
	// partDropped: not needed to read a sheet's cells (styles, themes,
	// images, drawings, pivot caches, document properties, ...): left out
	// of excelize's copy, never unzipped.
	partDropped xlsxPart = iota
	// partInMemory: read whole by excelize (the workbook, its
	// relationships, the content types).
	partInMemory
	// partStreamed: a sheet or the shared strings: unzipped to a temporary
	// file when over xlsxXMLInMemory, else read whole.
	partStreamed
)

// xlsxPartOf classifies a part by its name, as excelize finds parts: case
// insensitive, with backslashes read as slashes.
func xlsxPartOf(name string) xlsxPart {
	n := strings.ToLower(strings.ReplaceAll(name, "\\", "/"))
	switch {
	case strings.HasSuffix(n, "/"):
		return partDropped
	case n == "xl/sharedstrings.xml", strings.HasPrefix(n, "xl/worksheets/sheet") && path.Dir(n) == "xl/worksheets":
		return partStreamed
	case n == "[content_types].xml", n == "_rels/.rels", path.Dir(n) == "xl/_rels" && strings.HasSuffix(n, ".rels"):
		return partInMemory
	case path.Dir(n) == "xl" && strings.HasSuffix(n, ".xml") && n != "xl/styles.xml" && n != "xl/calcchain.xml":
		return partInMemory // the workbook, by whatever name its relationship gives it
	}
	return partDropped
}

// scanXLSX checks the zip of a workbook within lim and writes the copy
// excelize is to read (its kept parts, still compressed) to out:
//
//   - its central directory is at most xlsxMaxDirectory bytes and it has at
//     most xlsxMaxEntries parts;
//   - it unzips to at most xlsxUnzipLimit in all, as its headers say;
//   - no part of more than xlsxRatioFloor unzips to more than xlsxMaxRatio
//     times its zipped size;
//   - a part excelize reads whole is at most xlsxMaxPart, and those parts
//     at most xlsxMaxInMemory in all;
//   - every kept part unzips to no more than its header says (each is
//     unzipped here, and stopped there);
//   - no run of a sheet's or the shared strings' XML without a tag is longer
//     than xlsxMaxRun (a cell too large to be valid, which the XML decoder
//     would hold whole), and the shared string table has at most
//     xlsxMaxSharedStrings strings.
//
// A refusal names the part.
func scanXLSX(src string, out io.Writer, lim Limits) error {
	if err := checkZipDirectory(src); err != nil {
		return err
	}
	zr, err := zip.OpenReader(src)
	if err != nil {
		return &Error{Code: CodeMalformedXLSX, Message: "the upload is not an .xlsx workbook (not a zip archive)"}
	}
	defer zr.Close()
	if len(zr.File) > xlsxMaxEntries {
		return tooLarge("the workbook has %d parts; at most %d are read: save it as CSV, or split it", len(zr.File), xlsxMaxEntries)
	}
	var total, inMemory uint64
	for _, zf := range zr.File {
		size := zf.UncompressedSize64
		total += size
		if total > uint64(xlsxUnzipLimit(lim)) {
			return tooLarge("the workbook unzips to more than %s (at %s): save it as CSV, or split it", sizeString(xlsxUnzipLimit(lim)), clip(zf.Name))
		}
		if size > xlsxRatioFloor && size/max(zf.CompressedSize64, 1) > xlsxMaxRatio {
			return tooLarge("the part %s of the workbook unzips to %d times its size (%s from %s); at most %d times is read: it is not a workbook of a list",
				clip(zf.Name), size/max(zf.CompressedSize64, 1), sizeString(int64(min(size, 1<<62))), sizeString(int64(zf.CompressedSize64)), xlsxMaxRatio)
		}
		kind := xlsxPartOf(zf.Name)
		if kind == partInMemory || kind == partStreamed && size <= xlsxXMLInMemory {
			if kind == partInMemory && size > xlsxMaxPart {
				return tooLarge("the part %s of the workbook unzips to %s; at most %s is read: it is not a workbook of a list",
					clip(zf.Name), sizeString(int64(min(size, 1<<62))), sizeString(xlsxMaxPart))
			}
			if inMemory += size; inMemory > xlsxMaxInMemory {
				return tooLarge("the workbook's parts other than large sheets unzip to more than %s (at %s): save it as CSV, or split it",
					sizeString(xlsxMaxInMemory), clip(zf.Name))
			}
		}
	}
	w := zip.NewWriter(out)
	for _, zf := range zr.File {
		kind := xlsxPartOf(zf.Name)
		if kind == partDropped {
			continue
		}
		if err := scanPart(zf, kind, lim); err != nil {
			return err
		}
		if err := copyPart(w, zf); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("ingest: writing the workbook's copy: %w", err)
	}
	return nil
}

// scanPart unzips one kept part, no further than its header says, and
// checks a sheet's or the shared strings' XML.
func scanPart(zf *zip.File, kind xlsxPart, lim Limits) error {
	rc, err := zf.Open()
	if err != nil {
		return unreadablePart(zf, err)
	}
	defer rc.Close()
	name := strings.ToLower(strings.ReplaceAll(zf.Name, "\\", "/"))
	sst := name == "xl/sharedstrings.xml"
	s := xmlScan{maxRun: math.MaxInt64}
	if kind == partStreamed {
		s.maxRun = xlsxMaxRun(lim)
	}
	// archive/zip refuses to unzip past the header's size (ErrFormat); the
	// limit holds even if it did not.
	n, err := io.Copy(&s, io.LimitReader(rc, int64(min(zf.UncompressedSize64, 1<<62))+1))
	switch {
	case s.runTooLong:
		return &Error{Code: CodeInvalidRows, Message: "a cell is too large", Details: []FieldError{{Message: fmt.Sprintf(
			"%s holds a run of more than %d bytes without a tag: a cell far over the limit of %d bytes", clip(zf.Name), s.maxRun, lim.MaxCellBytes)}}}
	case errors.Is(err, zip.ErrFormat) || err == nil && uint64(n) > zf.UncompressedSize64:
		return tooLarge("the part %s of the workbook unzips to more than its header says (%d bytes): it is not a workbook of a list",
			clip(zf.Name), zf.UncompressedSize64)
	case err != nil:
		return unreadablePart(zf, err)
	case uint64(n) != zf.UncompressedSize64:
		return &Error{Code: CodeMalformedXLSX, Message: "the workbook cannot be read", Details: []FieldError{{Message: fmt.Sprintf(
			"the part %s unzips to %d bytes, fewer than its header says (%d)", clip(zf.Name), n, zf.UncompressedSize64)}}}
	case sst && s.items > xlsxMaxSharedStrings(lim):
		return tooLarge("the workbook has more than %d shared strings: save it as CSV, or split it", xlsxMaxSharedStrings(lim))
	}
	return nil
}

func unreadablePart(zf *zip.File, err error) error {
	return &Error{Code: CodeMalformedXLSX, Message: "the workbook cannot be read", Details: []FieldError{{
		Message: clip(fmt.Sprintf("the part %s: %v", zf.Name, err))}}}
}

// copyPart copies a part into w as it is zipped: nothing is unzipped.
func copyPart(w *zip.Writer, zf *zip.File) error {
	raw, err := zf.OpenRaw()
	if err != nil {
		return unreadablePart(zf, err)
	}
	fh := zf.FileHeader
	fh.Extra = nil // excelize needs none; zip64 sizes are rewritten by the writer
	dst, err := w.CreateRaw(&fh)
	if err != nil {
		return fmt.Errorf("ingest: copying the part %s: %w", clip(zf.Name), err)
	}
	if _, err := io.Copy(dst, raw); err != nil {
		return fmt.Errorf("ingest: copying the part %s: %w", clip(zf.Name), err)
	}
	return nil
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

// scanXLSXFile is scanXLSX of the workbook in src, its copy written to dst.
func scanXLSXFile(src, dst string, lim Limits) error {
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("ingest: the workbook's copy: %w", err)
	}
	err = scanXLSX(src, out, lim)
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("ingest: the workbook's copy: %w", cerr)
	}
	return err
}
