package ingest

import (
	"archive/zip"
	"bufio"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The shared string table is read once, as a stream, into two files beside
// the workbook: the strings' text one after another, and where each ends
// (8 bytes a string). A cell's string is read back from them through a
// small cache of their pages: memory does not grow with the strings, where
// an index in memory costs about 40 bytes a string (2,000,000 strings:
// 80 MB, and twice that while it grows).

// xlsxMaxSharedStrings bounds the shared string table's count: a sheet
// within the limits has no use for more than four per lookup.
func xlsxMaxSharedStrings(lim Limits) int64 { return 4*int64(lim.MaxLookups) + 1024 }

// xlsxMaxSharedText bounds the text of the shared strings, in all: what
// they may write to disk besides their ends (8 bytes a string).
func xlsxMaxSharedText(lim Limits) int64 { return lim.MaxBytes }

// The cache of a strings file: pages of sstPage bytes, sstPages of them.
const (
	sstPage  = 4 << 10
	sstPages = 64
)

// sharedStrings is a shared string table on disk.
type sharedStrings struct {
	n    int64 // strings
	text pagedFile
	ends pagedFile
	buf  []byte
}

// buildSharedStrings reads the shared strings part zf into files in dir.
// A string is the text of its <t> elements, its rich-text runs' included
// and its phonetic runs' left out, as stored (whitespace kept; the cell's
// check trims it), with Excel's _xHHHH_ escapes read.
func buildSharedStrings(zf *zip.File, dir string, lim Limits) (_ *sharedStrings, err error) {
	s := &sharedStrings{}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.text.f, err = os.Create(filepath.Join(dir, "strings")); err != nil {
		return nil, fmt.Errorf("ingest: the shared strings' file: %w", err)
	}
	if s.ends.f, err = os.Create(filepath.Join(dir, "ends")); err != nil {
		return nil, fmt.Errorf("ingest: the shared strings' file: %w", err)
	}
	rc, err := openPart(zf, xlsxMaxRun(lim), lim)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	text, ends := bufio.NewWriterSize(s.text.f, 64<<10), bufio.NewWriterSize(s.ends.f, 64<<10)
	maxStrings, maxText, maxOne := xlsxMaxSharedStrings(lim), xlsxMaxSharedText(lim), int(xlsxMaxRun(lim))
	var (
		end  int64
		item []byte
		t    textRun
		in   bool // in an <si>
		e8   [8]byte
	)
	d := xml.NewDecoder(rc)
	for {
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, partError(zf, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if tok.Name.Local == "si" {
				in, item = true, item[:0]
				t = textRun{}
			} else if in {
				t.start(tok.Name.Local)
			}
		case xml.EndElement:
			if tok.Name.Local != "si" {
				if in {
					t.end(tok.Name.Local)
				}
				continue
			}
			in = false
			if s.n++; s.n > maxStrings {
				return nil, tooLarge("the workbook has more than %d shared strings: save it as CSV, or split it", maxStrings)
			}
			item = unescapeXString(item)
			if end += int64(len(item)); end > maxText {
				return nil, tooLarge("the workbook's shared strings hold more than %s of text: save it as CSV, or split it", sizeString(maxText))
			}
			binary.LittleEndian.PutUint64(e8[:], uint64(end))
			if _, err := text.Write(item); err != nil {
				return nil, fmt.Errorf("ingest: the shared strings' file: %w", err)
			}
			if _, err := ends.Write(e8[:]); err != nil {
				return nil, fmt.Errorf("ingest: the shared strings' file: %w", err)
			}
		case xml.CharData:
			if in && t.inText() {
				if item = append(item, tok...); len(item) > maxOne {
					return nil, &Error{Code: CodeInvalidRows, Message: "a cell is too large", Details: []FieldError{{Message: fmt.Sprintf(
						"the shared string %d holds more than %d bytes: a cell far over the limit of %d bytes", s.n, maxOne, lim.MaxCellBytes)}}}
				}
			}
		}
	}
	if err := text.Flush(); err != nil {
		return nil, fmt.Errorf("ingest: the shared strings' file: %w", err)
	}
	if err := ends.Flush(); err != nil {
		return nil, fmt.Errorf("ingest: the shared strings' file: %w", err)
	}
	return s, nil
}

// get is the string of index i; ok false when the table has no such index.
func (s *sharedStrings) get(i int64) (_ string, ok bool, err error) {
	if s == nil || i < 0 || i >= s.n {
		return "", false, nil
	}
	var e [16]byte
	var start, end int64
	if i == 0 {
		err = s.ends.readAt(e[8:], 0)
	} else {
		err = s.ends.readAt(e[:], (i-1)*8)
		start = int64(binary.LittleEndian.Uint64(e[:8]))
	}
	end = int64(binary.LittleEndian.Uint64(e[8:]))
	if err != nil {
		return "", false, fmt.Errorf("ingest: reading the shared strings: %w", err)
	}
	if cap(s.buf) < int(end-start) {
		s.buf = make([]byte, end-start)
	}
	b := s.buf[:end-start]
	if err := s.text.readAt(b, start); err != nil {
		return "", false, fmt.Errorf("ingest: reading the shared strings: %w", err)
	}
	return string(b), true, nil
}

// Close closes the files (removing them is the caller's: they are in its
// folder).
func (s *sharedStrings) Close() {
	if s == nil {
		return
	}
	for _, f := range []*os.File{s.text.f, s.ends.f} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// textRun follows where a string's text is among the elements of a shared
// string or an inline string: in <t>, directly or in a rich-text run <r>,
// and not in a phonetic run (<rPh>) or its properties.
type textRun struct {
	t, skip int
}

func (r *textRun) start(local string) {
	switch local {
	case "rPh", "phoneticPr":
		r.skip++
	case "t":
		r.t++
	}
}

func (r *textRun) end(local string) {
	switch local {
	case "rPh", "phoneticPr":
		r.skip = max(0, r.skip-1)
	case "t":
		r.t = max(0, r.t-1)
	}
}

func (r *textRun) inText() bool { return r.t > 0 && r.skip == 0 }

// unescapeXString reads Excel's escapes of characters XML cannot hold
// (ST_Xstring): _xHHHH_ is the UTF-16 unit HHHH (_x005F_ an underscore,
// which is how a literal "_x" is written), in place.
func unescapeXString(b []byte) []byte {
	if !containsX(b) {
		return b
	}
	out := b[:0]
	for i := 0; i < len(b); {
		u, ok := xEscape(b[i:])
		if !ok {
			out = append(out, b[i])
			i++
			continue
		}
		i += 7
		r := rune(u)
		if utf16.IsSurrogate(r) {
			if lo, ok := xEscape(b[i:]); ok {
				if c := utf16.DecodeRune(r, rune(lo)); c != utf8.RuneError {
					r, i = c, i+7
				}
			}
		}
		if utf16.IsSurrogate(r) {
			r = utf8.RuneError
		}
		out = utf8.AppendRune(out, r)
	}
	return out
}

func containsX(b []byte) bool {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '_' && b[i+1] == 'x' {
			return true
		}
	}
	return false
}

// xEscape reads an _xHHHH_ at the start of b.
func xEscape(b []byte) (uint16, bool) {
	if len(b) < 7 || b[0] != '_' || b[1] != 'x' || b[6] != '_' {
		return 0, false
	}
	u, err := strconv.ParseUint(string(b[2:6]), 16, 16)
	return uint16(u), err == nil
}

// pagedFile reads a file through a cache of its pages.
type pagedFile struct {
	f     *os.File
	pages [sstPages]struct {
		at  int64 // the page's number + 1; 0: empty
		n   int
		buf []byte
	}
}

func (p *pagedFile) readAt(dst []byte, off int64) error {
	for len(dst) > 0 {
		no := off / sstPage
		pg := &p.pages[no%sstPages]
		if pg.at != no+1 {
			if pg.buf == nil {
				pg.buf = make([]byte, sstPage)
			}
			n, err := p.f.ReadAt(pg.buf, no*sstPage)
			if err != nil && err != io.EOF {
				return err
			}
			pg.at, pg.n = no+1, n
		}
		in := int(off - no*sstPage)
		if in >= pg.n {
			return io.ErrUnexpectedEOF
		}
		c := copy(dst, pg.buf[in:pg.n])
		dst, off = dst[c:], off+int64(c)
	}
	return nil
}
