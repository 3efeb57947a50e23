package ingest

import (
	"archive/zip"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// A sheet's rows are read as a stream straight from the spooled workbook:
// one row's cells at a time, a shared string read from disk when a cell
// names it.

// Excel's bounds of a sheet.
const (
	xlsxMaxRows    = 1 << 20
	xlsxMaxColumns = 1 << 14
)

// sheetReader reads the rows of one sheet.
type sheetReader struct {
	zf     *zip.File
	rc     io.ReadCloser
	d      *xml.Decoder
	sst    *sharedStrings
	maxRun int
	row    int      // the sheet row being read
	rec    []string // its cells
	c      cellState
	done   bool
}

// cellError is a cell that cannot be read: its sheet row and column (from 1).
type cellError struct {
	row, col int
	msg      string
}

func (e *cellError) Error() string {
	return fmt.Sprintf("cell %s%d: %s", columnLetters(e.col), e.row, e.msg)
}

func openSheet(zf *zip.File, sst *sharedStrings, lim Limits) (*sheetReader, error) {
	rc, err := openPart(zf, xlsxMaxRun(lim), lim)
	if err != nil {
		return nil, err
	}
	return &sheetReader{zf: zf, rc: rc, d: xml.NewDecoder(rc), sst: sst, maxRun: int(xlsxMaxRun(lim))}, nil
}

func (r *sheetReader) Close() error { return r.rc.Close() }

// next reads the next row of the sheet: its number and its cells, from
// column A to its last cell with a value (a cell without one is ""). ok is
// false after the last row. The cells are valid until the next call.
func (r *sheetReader) next() (row int, rec []string, ok bool, err error) {
	if r.done {
		return 0, nil, false, nil
	}
	inRow, c := false, &r.c
	for {
		tok, err := r.d.RawToken()
		if err == io.EOF {
			r.done = true
			if inRow {
				return 0, nil, false, r.fail(r.row, 0, "the sheet ends inside a row")
			}
			return 0, nil, false, nil
		}
		if err != nil {
			return 0, nil, false, partError(r.zf, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			switch {
			case tok.Name.Local == "row" && !inRow:
				n := r.row + 1
				if v := attr(tok, "r", false); v != "" {
					if n, err = strconv.Atoi(v); err != nil || n <= r.row || n > xlsxMaxRows {
						return 0, nil, false, r.fail(r.row+1, 0, fmt.Sprintf("the row number %q is not a number after %d and at most %d", clip(v), r.row, xlsxMaxRows))
					}
				}
				inRow, r.row, r.rec = true, n, r.rec[:0]
			case tok.Name.Local == "c" && inRow && !c.in:
				col := len(r.rec) + 1
				if ref := attr(tok, "r", false); ref != "" {
					if col = columnOf(ref); col == 0 {
						return 0, nil, false, r.fail(r.row, len(r.rec)+1, fmt.Sprintf("the cell reference %q is not a column of at most %s", clip(ref), columnLetters(xlsxMaxColumns)))
					}
				}
				*c = cellState{in: true, col: col, typ: attr(tok, "t", false), text: c.text[:0]}
			case c.in:
				c.start(tok.Name.Local)
			}
		case xml.EndElement:
			switch {
			case tok.Name.Local == "c" && c.in:
				c.in = false
				if err := r.cell(c); err != nil {
					return 0, nil, false, err
				}
			case tok.Name.Local == "row" && inRow && !c.in:
				return r.row, r.rec, true, nil
			case tok.Name.Local == "sheetData":
				r.done = true
				return 0, nil, false, nil
			case c.in:
				c.end(tok.Name.Local)
			}
		case xml.CharData:
			if c.in && c.inValue() {
				if c.text = append(c.text, tok...); len(c.text) > r.maxRun {
					return 0, nil, false, r.fail(r.row, c.col, fmt.Sprintf("a cell of more than %d bytes", r.maxRun))
				}
			}
		}
	}
}

// cell puts the value of the cell just read into the row, as stored: a
// shared string's text, an inline string's, else the <v> as written (a
// number, a boolean's 0 or 1, a formula's last value). A cell without a
// value counts only if it has a formula.
func (r *sheetReader) cell(c *cellState) error {
	val := string(c.text)
	switch c.typ {
	case "s":
		if val == "" {
			break
		}
		i, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return r.fail(r.row, c.col, fmt.Sprintf("the shared string index %q is not a number", clip(val)))
		}
		s, ok, err := r.sst.get(i)
		if err != nil {
			return err
		}
		if !ok {
			return r.fail(r.row, c.col, fmt.Sprintf("the shared string %d is not in the workbook's table (it has %d)", i, r.sst.count()))
		}
		val = s
	case "inlineStr":
		val = string(unescapeXString(c.text))
	}
	if val == "" && !c.formula {
		return nil
	}
	for len(r.rec) < c.col-1 {
		r.rec = append(r.rec, "")
	}
	if c.col <= len(r.rec) {
		r.rec[c.col-1] = val // a column written twice: the later one, as Excel reads it
	} else {
		r.rec = append(r.rec, val)
	}
	return nil
}

func (r *sheetReader) fail(row, col int, msg string) error {
	return &cellError{row: row, col: col, msg: msg}
}

// cellState is the cell being read: where its value's text is among its
// elements (<v>, or <is> holding <t> and rich-text runs) and that text.
type cellState struct {
	in      bool
	col     int
	typ     string
	formula bool
	v, is   int
	run     textRun
	text    []byte
}

func (c *cellState) start(local string) {
	switch local {
	case "v":
		c.v++
	case "f":
		c.formula = true
	case "is":
		c.is++
	default:
		if c.is > 0 {
			c.run.start(local)
		}
	}
}

func (c *cellState) end(local string) {
	switch local {
	case "v":
		c.v = max(0, c.v-1)
	case "is":
		c.is = max(0, c.is-1)
	default:
		if c.is > 0 {
			c.run.end(local)
		}
	}
}

// inValue: the text now read is the cell's value (a formula's is not).
func (c *cellState) inValue() bool {
	if c.typ == "inlineStr" {
		return c.is > 0 && c.run.inText()
	}
	return c.v > 0
}

// columnOf is the column (from 1) of a cell reference like "AB12"; 0 when
// ref is not one, or past Excel's last column.
func columnOf(ref string) int {
	col, i := 0, 0
	for ; i < len(ref); i++ {
		ch := ref[i] | 0x20 // lower case
		if ch < 'a' || ch > 'z' {
			break
		}
		if col = col*26 + int(ch-'a'+1); col > xlsxMaxColumns {
			return 0
		}
	}
	if i == 0 || i == len(ref) {
		return 0
	}
	for _, d := range ref[i:] {
		if d < '0' || d > '9' {
			return 0
		}
	}
	return col
}

// columnLetters is the letters of column col (from 1): 1 is A, 27 AA.
func columnLetters(col int) string {
	var b []byte
	for ; col > 0; col = (col - 1) / 26 {
		b = append([]byte{byte('A' + (col-1)%26)}, b...)
	}
	return string(b)
}

// count is the strings in the table (0 for none).
func (s *sharedStrings) count() int64 {
	if s == nil {
		return 0
	}
	return s.n
}
