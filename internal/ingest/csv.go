package ingest

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// recordSlack is added to the per-record byte budget for the line ending.
const recordSlack = 64

var (
	errUploadTooLarge = errors.New("ingest: upload over MaxBytes")
	errRecordTooLong  = errors.New("ingest: CSV record over its byte budget")
	utf8BOM           = []byte{0xEF, 0xBB, 0xBF}
)

// knownColumns in the order error messages list them.
var knownColumns = []string{colRef, colProfileURL, colName, colCompany, colEmail}

// ParseCSV reads a CSV upload and calls emit for every valid lookup, in
// order; a nil emit only validates. After a bad row it keeps reading to
// collect up to lim.MaxErrors details, but stops calling emit. It returns an
// *Error for bad input, emit's error, or a read error of r (wrapped).
//
// ParseCSV enforces lim.MaxBytes itself and never reads more than one record's
// budget (the header's column count, or lim.MaxColumns for the header itself,
// times lim.MaxCellBytes plus a little) past the last record boundary, so a
// huge line without a newline costs bounded memory and reading.
func ParseCSV(r io.Reader, opts Options, lim Limits, emit func(Lookup) error) error {
	lim = lim.withDefaults()
	g, err := newGuard(r, lim.MaxBytes)
	if err != nil {
		return err
	}
	g.cellBytes = lim.MaxCellBytes
	g.setMaxRecord(lim.MaxColumns)
	cr := csv.NewReader(g)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true

	rec, err := cr.Read()
	if err == io.EOF {
		return emptyUpload("the upload is empty")
	}
	if err != nil {
		return csvReadError(g, err, 0, nil)
	}
	h, herr := parseHeader(rec, lim)
	if herr != nil {
		return herr
	}
	g.setMaxRecord(len(h.names))

	x := &expander{lim: lim, roles: opts.Roles, emit: emit}
	row := 0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		row++
		if err != nil {
			return csvReadError(g, err, row, x)
		}
		if blank(rec) {
			continue // spreadsheets export empty rows as ",,,"
		}
		var cellErrs []FieldError
		if len(rec) != len(h.names) {
			x.rows++
			cellErrs = append(cellErrs, FieldError{Row: row, Message: fmt.Sprintf(
				"the row has %d fields; the header has %d", len(rec), len(h.names))})
			err = x.fail(cellErrs...)
		} else {
			err = x.row(h.row(row, rec, lim, &cellErrs), cellErrs)
		}
		if err == errStop {
			return x.result("", row)
		}
		if err != nil {
			return err
		}
	}
	return x.result("the upload has a header but no data rows", 0)
}

// csvReadError maps an error of csv.Reader.Read at data row row (0: header).
func csvReadError(g *guard, err error, row int, x *expander) error {
	var prior []FieldError
	if x != nil {
		// Room for this error within MaxErrors: drop the last earlier one.
		prior = x.errs[:min(len(x.errs), x.lim.MaxErrors-1)]
	}
	switch {
	case g.err == errUploadTooLarge:
		return tooLarge("the upload is larger than %s", sizeString(g.maxTotal))
	case g.err == errRecordTooLong:
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

func blank(rec []string) bool {
	for _, c := range rec {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}

// header maps CSV columns to fields.
type header struct {
	names []string // trimmed, original case; "" for an unnamed column
	known []string // the known column name per column, or ""
}

func parseHeader(rec []string, lim Limits) (*header, *Error) {
	headerErr := func(msg string, d ...FieldError) *Error {
		return &Error{Code: CodeInvalidRows, Message: msg, Details: d}
	}
	if len(rec) > lim.MaxColumns {
		return nil, headerErr("the header has too many columns", FieldError{Message: fmt.Sprintf(
			"the header has %d columns; the limit is %d", len(rec), lim.MaxColumns)})
	}
	h := &header{names: make([]string, len(rec)), known: make([]string, len(rec))}
	var errs []FieldError
	seen := make(map[string]int, len(rec))
	hasKey := false
	for i, c := range rec {
		name, msg := checkCell(c, lim.MaxCellBytes, false)
		if msg != "" {
			errs = append(errs, FieldError{Column: unnamedColumn(i), Message: "header name: " + msg})
			continue
		}
		h.names[i] = name
		if name == "" {
			continue
		}
		key := strings.ToLower(name)
		if j, dup := seen[key]; dup {
			errs = append(errs, FieldError{Column: name, Message: fmt.Sprintf(
				"column %q appears twice (columns %d and %d)", name, j+1, i+1)})
			continue
		}
		seen[key] = i
		for _, k := range knownColumns {
			if key == k {
				h.known[i] = k
				hasKey = hasKey || k != colRef
			}
		}
	}
	if len(errs) == 0 && !hasKey {
		found := strings.Join(h.names[:min(len(h.names), 10)], ", ")
		if len(h.names) > 10 {
			found += ", ..."
		}
		errs = append(errs, FieldError{Message: fmt.Sprintf(
			"the first row must be a header naming at least one of profile_url, email, name, company (known columns: %s); found: %s",
			strings.Join(knownColumns, ", "), found)})
	}
	if len(errs) > 0 {
		return nil, headerErr("the header is invalid", errs[:min(len(errs), lim.MaxErrors)]...)
	}
	return h, nil
}

func unnamedColumn(i int) string { return fmt.Sprintf("column %d", i+1) }

// row checks the cells of one record with as many fields as the header and
// returns the row's values; cell errors are appended to errs.
func (h *header) row(row int, rec []string, lim Limits, errs *[]FieldError) rowIn {
	in := rowIn{row: row}
	for i, c := range rec {
		known, name := h.known[i], h.names[i]
		col := name
		if col == "" {
			col = unnamedColumn(i)
		}
		v, msg := checkCell(c, lim.MaxCellBytes, known == "")
		if msg == "" && name == "" && v != "" {
			msg = "a value in a column without a header name"
		}
		if msg != "" {
			*errs = append(*errs, FieldError{Row: row, Column: col, Message: msg})
			in.badCell = in.badCell || known != ""
			continue
		}
		switch known {
		case colRef:
			in.ref = v
		case colProfileURL:
			in.profileURL = v
		case colName:
			in.name = v
		case colCompany:
			in.company = v
		case colEmail:
			in.email = v
		case "":
			if name == "" {
				continue
			}
			if in.extra == nil {
				in.extra = make(map[string]string, len(rec))
			}
			in.extra[name] = v
		}
	}
	return in
}

// guard sits between the upload and csv.Reader. It strips a UTF-8 BOM,
// fails with errUploadTooLarge past maxTotal bytes, and fails with
// errRecordTooLong when one CSV record passes maxRecord. To find record
// boundaries it follows the CSV quoting the way csv.Reader does (they agree on
// every input csv.Reader accepts). It counts a record's bytes as csv.Reader's
// output holds them: a doubled quote and a CRLF count one byte each, so a
// record of valid cells never exceeds columns × (MaxCellBytes+3).
type guard struct {
	r         io.Reader
	total     int64 // bytes read from the upload
	maxTotal  int64
	rec       int64 // counted bytes of the current record
	maxRecord int64 // columns × (cellBytes + 3) + recordSlack: a cell counts its content, two quotes and a comma
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

func newGuard(r io.Reader, maxTotal int64) (*guard, error) {
	r, bomLen, err := stripBOM(r)
	if err != nil {
		return nil, err
	}
	return &guard{r: r, total: bomLen, maxTotal: maxTotal}, nil
}

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
	// Never read more than one byte past either limit.
	if rem := g.maxTotal - g.total + 1; int64(len(p)) > rem {
		p = p[:max(rem, 1)]
	}
	if rem := g.maxRecord - g.rec + 1; int64(len(p)) > rem {
		p = p[:max(rem, 1)]
	}
	n, err := g.r.Read(p)
	g.total += int64(n)
	if g.total > g.maxTotal {
		g.err = errUploadTooLarge
		return 0, g.err
	}
	for _, c := range p[:n] {
		g.rec++
		switch g.state {
		case lexFieldStart:
			switch c {
			case '"':
				g.state = lexQuoted
			case ',':
			case '\n':
				g.rec = 0
			default:
				g.state = lexUnquoted
			}
		case lexUnquoted:
			switch c {
			case ',':
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
			case ',':
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
