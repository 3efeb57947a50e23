package ingest

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
)

// recordSlack is added to the per-record byte budget for the line ending.
const recordSlack = 64

var (
	errUploadTooLarge = errors.New("ingest: upload over MaxBytes")
	errRecordTooLong  = errors.New("ingest: CSV record over its byte budget")
	utf8BOM           = []byte{0xEF, 0xBB, 0xBF}
)

// ParseCSV reads a CSV upload and calls emit for every valid lookup, in
// order; a nil emit only validates. After a bad row it keeps reading to
// collect up to lim.MaxErrors details, but stops calling emit. It returns what
// the upload held, and an *Error for bad input, emit's error, or a read error
// of r (wrapped).
//
// The text is decoded by opts.Encoding (see decodeText) and split on
// opts.Delimiter, or on the delimiter the header line uses (see
// sniffDelimiter). Columns map to fields by opts.Columns and the header
// names (see assignColumns).
//
// ParseCSV enforces lim.MaxBytes on the bytes of r, and never reads more than
// one record's budget (the header's column count, or lim.MaxColumns for the
// header itself, times lim.MaxCellBytes plus a little, in decoded text) past
// the last record boundary, so a huge line without a newline costs bounded
// memory and reading.
func ParseCSV(r io.Reader, opts Options, lim Limits, emit func(Lookup) error) (Summary, error) {
	lim = lim.withDefaults()
	raw := &limitReader{r: r, max: lim.MaxBytes}
	text, err := decodeText(raw, opts.Encoding)
	if err != nil {
		return Summary{}, csvReadError(raw, nil, err, 0, nil)
	}
	comma := opts.Delimiter
	if comma == 0 {
		if comma, text, err = sniffDelimiter(text); err != nil {
			return Summary{}, csvReadError(raw, nil, err, 0, nil)
		}
	}
	g := &guard{r: text, comma: comma, cellBytes: lim.MaxCellBytes}
	g.setMaxRecord(lim.MaxColumns)
	cr := csv.NewReader(g)
	cr.Comma = rune(comma)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true

	rec, err := cr.Read()
	if err == io.EOF {
		return Summary{}, emptyUpload("the upload is empty")
	}
	if err != nil {
		return Summary{}, csvReadError(raw, g, err, 0, nil)
	}
	h, herr := parseHeader(rec, opts.Columns, lim)
	if herr != nil {
		return Summary{}, herr
	}
	g.setMaxRecord(len(h.names))

	x := &expander{lim: lim, roles: opts.Roles, deferRoles: opts.DeferRoles, emit: emit, strict: true}
	row := 0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		row++
		if err != nil {
			return Summary{}, csvReadError(raw, g, err, row, x)
		}
		if err := h.record(x, row, rec); err == errStop {
			return Summary{}, x.result("", row)
		} else if err != nil {
			return Summary{}, err
		}
	}
	if err := x.result("the upload has a header but no data rows", 0); err != nil {
		return Summary{}, err
	}
	return h.summary(x), nil
}

// csvReadError maps an error of csv.Reader.Read at data row row (0: header).
func csvReadError(raw *limitReader, g *guard, err error, row int, x *expander) error {
	var prior []FieldError
	if x != nil {
		// Room for this error within MaxErrors: drop the last earlier one.
		prior = x.errs[:min(len(x.errs), x.lim.MaxErrors-1)]
	}
	switch {
	case raw.over:
		return tooLarge("the upload is larger than %s", sizeString(raw.max))
	case g != nil && g.err == errRecordTooLong:
		what := fmt.Sprintf("row %d", row)
		if row == 0 {
			what = "the header row"
		}
		d := FieldError{Row: row, Message: fmt.Sprintf(
			"%s is longer than %d bytes, more than %d columns of at most %d bytes can hold (a missing newline or closing quote?); stopped reading here",
			what, g.maxRecord, g.columns, g.cellBytes)}
		return &Error{Code: CodeInvalidRows, Message: what + " is too long", Details: append(prior, d)}
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		where := fmt.Sprintf("row %d", row)
		if row == 0 {
			where = "the header"
		}
		msg := fmt.Sprintf("line %d, column %d: %v", pe.Line, pe.Column, pe.Err)
		if errors.Is(pe.Err, csv.ErrBareQuote) || errors.Is(pe.Err, csv.ErrQuote) {
			msg += ` (a cell with a quote must be quoted, its quotes doubled: "say ""hi""")`
		}
		return &Error{Code: CodeMalformedCSV, Message: "the CSV cannot be parsed at " + where,
			Details: append(prior, FieldError{Row: row, Message: msg})}
	}
	return fmt.Errorf("ingest: reading the upload: %w", err)
}

// limitReader fails past max bytes and remembers that it did.
type limitReader struct {
	r    io.Reader
	n    int64
	max  int64
	over bool
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.over {
		return 0, errUploadTooLarge
	}
	if rem := l.max - l.n + 1; int64(len(p)) > rem {
		p = p[:max(rem, 1)] // never read more than one byte past the limit
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > l.max {
		l.over = true
		return 0, errUploadTooLarge
	}
	return n, err
}

// guard sits between the decoded text and csv.Reader. It fails with
// errRecordTooLong when one CSV record passes maxRecord. To find record
// boundaries it follows the CSV quoting the way csv.Reader does (they agree on
// every input csv.Reader accepts). It counts a record's bytes as csv.Reader's
// output holds them: a doubled quote and a CRLF count one byte each, so a
// record of valid cells never exceeds columns × (MaxCellBytes+3).
type guard struct {
	r         io.Reader
	comma     byte
	rec       int64 // counted bytes of the current record
	maxRecord int64 // columns × (cellBytes + 3) + recordSlack: a cell counts its content, two quotes and a delimiter
	columns   int
	cellBytes int
	state     byte
	prevCR    bool
	err       error // sticky
}

// guard lexer states.
const (
	lexFieldStart = iota
	lexUnquoted
	lexQuoted
	lexQuoteInQuoted // a quote inside a quoted field: the end, or the first of a pair
)

// stripBOM drops a leading UTF-8 byte order mark and reports its length.
func stripBOM(r io.Reader) (io.Reader, int64, error) {
	var head [3]byte
	n, err := io.ReadFull(r, head[:])
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, 0, fmt.Errorf("ingest: reading the upload: %w", err)
	}
	if n == 3 && bytes.Equal(head[:], utf8BOM) {
		return r, 3, nil
	}
	return io.MultiReader(bytes.NewReader(head[:n]), r), 0, nil
}

// setMaxRecord sets the budget of a record to what columns cells can hold.
func (g *guard) setMaxRecord(columns int) {
	g.columns = columns
	g.maxRecord = int64(columns)*int64(g.cellBytes+3) + recordSlack
}

func (g *guard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// Never read more than one byte past the record's budget.
	if rem := g.maxRecord - g.rec + 1; int64(len(p)) > rem {
		p = p[:max(rem, 1)]
	}
	n, err := g.r.Read(p)
	for _, c := range p[:n] {
		g.rec++
		switch g.state {
		case lexFieldStart:
			switch c {
			case '"':
				g.state = lexQuoted
			case g.comma:
			case '\n':
				g.rec = 0
			default:
				g.state = lexUnquoted
			}
		case lexUnquoted:
			switch c {
			case g.comma:
				g.state = lexFieldStart
			case '\n':
				g.state, g.rec = lexFieldStart, 0
			}
		case lexQuoted:
			if c == '"' {
				g.state = lexQuoteInQuoted
			} else if c == '\n' && g.prevCR {
				g.rec-- // CRLF is one byte in the cell
			}
		case lexQuoteInQuoted:
			switch c {
			case '"':
				g.state = lexQuoted
				g.rec-- // a doubled quote is one byte in the cell
			case g.comma:
				g.state = lexFieldStart
			case '\n':
				g.state, g.rec = lexFieldStart, 0
			default:
				g.state = lexUnquoted // csv.Reader rejects this, unless it is a CR before LF
			}
		}
		g.prevCR = c == '\r'
		if g.rec > g.maxRecord {
			g.err = errRecordTooLong
			return 0, g.err
		}
	}
	return n, err
}
