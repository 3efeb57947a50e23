package ingest

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// CodeMalformedXLSX is a 400: the upload is not an .xlsx workbook we can read.
const CodeMalformedXLSX = "malformed_xlsx"

// ParseXLSX reads the sheet opts.Sheet (the first when "") of the .xlsx
// workbook in the file path, with ParseCSV's semantics: the first row is the
// header, a row's number is its sheet row less one, blank rows are skipped,
// emit gets each lookup while no row is bad. Its temporary files go to tmpDir
// and are removed before it returns. It stops with ctx.
//
// Every part's header is checked before anything is unzipped
// (checkXLSXParts); then only the workbook's lists, the shared strings and
// the one sheet are unzipped, each as a stream from path: the shared
// strings into files of their own in tmpDir (xlsxsst.go), the sheet a row
// at a time (xlsxsheet.go). Memory does not grow with the workbook, and
// disk only with its shared strings.
func ParseXLSX(ctx context.Context, path, tmpDir string, opts Options, lim Limits, emit func(Lookup) error) (Summary, error) {
	lim = lim.withDefaults()
	fi, err := os.Stat(path)
	if err != nil {
		return Summary{}, fmt.Errorf("ingest: the workbook: %w", err)
	}
	if fi.Size() > lim.MaxBytes {
		return Summary{}, tooLarge("the upload is larger than %s", sizeString(lim.MaxBytes))
	}
	if err := checkZipDirectory(path); err != nil {
		return Summary{}, err
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		return Summary{}, &Error{Code: CodeMalformedXLSX, Message: "the upload is not an .xlsx workbook (not a zip archive)",
			Details: []FieldError{{Message: "an encrypted workbook, or an old .xls? save it as .xlsx or CSV"}}}
	}
	defer zr.Close()
	parts, err := checkXLSXParts(&zr.Reader, lim)
	if err != nil {
		return Summary{}, err
	}
	book, err := readBook(parts, lim)
	if err != nil {
		return Summary{}, err
	}
	sheet, err := pickSheet(book, opts.Sheet)
	if err != nil {
		return Summary{}, err
	}
	var sst *sharedStrings
	if book.sst != "" {
		dir, err := os.MkdirTemp(tmpDir, "xlsx-")
		if err != nil {
			return Summary{}, fmt.Errorf("ingest: a directory for the workbook: %w", err)
		}
		defer os.RemoveAll(dir)
		if sst, err = buildSharedStrings(parts[book.sst], dir, lim); err != nil {
			return Summary{}, err
		}
		defer sst.Close()
	}
	rows, err := openSheet(parts[sheet.part], sst, lim)
	if err != nil {
		return Summary{}, err
	}
	defer rows.Close()

	var h *header
	x := &expander{lim: lim, roles: opts.Roles, deferRoles: opts.DeferRoles, emit: emit}
	for n := 1; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return Summary{}, fmt.Errorf("ingest: reading the workbook: %w", err)
			}
		}
		sheetRow, rec, ok, err := rows.next()
		if err != nil {
			return Summary{}, xlsxRowError(x, h, err)
		}
		if !ok {
			break
		}
		if h == nil {
			if sheetRow != 1 || blank(rec) {
				return Summary{}, &Error{Code: CodeInvalidRows, Message: "the header is invalid", Details: []FieldError{{
					Message: "the first row of the sheet must be a header naming the columns; it is empty"}}}
			}
			if h, err = parseHeaderErr(rec, opts.Columns, lim); err != nil {
				return Summary{}, err
			}
			continue
		}
		if err := h.record(x, sheetRow-1, rec); err == errStop {
			return Summary{}, x.result("", sheetRow-1)
		} else if err != nil {
			return Summary{}, err
		}
	}
	if h == nil {
		return Summary{}, emptyUpload(fmt.Sprintf("the sheet %q is empty", sheet.name))
	}
	if err := x.result("the sheet has a header but no data rows", 0); err != nil {
		return Summary{}, err
	}
	return h.summary(x), nil
}

// pickSheet is the sheet named name (case-insensitive), or the first.
func pickSheet(book xlsxBook, name string) (xlsxSheet, error) {
	if len(book.sheets) == 0 {
		return xlsxSheet{}, emptyUpload("the workbook has no sheet")
	}
	s, found := book.sheets[0], name == ""
	for _, b := range book.sheets {
		if !found && strings.EqualFold(b.name, name) {
			s, found = b, true
		}
	}
	if !found {
		names := make([]string, len(book.sheets))
		for i, b := range book.sheets {
			names[i] = b.name
		}
		return xlsxSheet{}, &Error{Code: CodeInvalidOptions, Message: "invalid job options", Details: []FieldError{{Column: "sheet",
			Message: fmt.Sprintf("the workbook has no sheet %q (its sheets: %s)", clip(name), headerList(names))}}}
	}
	if s.part == "" {
		return xlsxSheet{}, &Error{Code: CodeMalformedXLSX, Message: "the sheet cannot be read", Details: []FieldError{{Column: "sheet",
			Message: fmt.Sprintf("the sheet %q has no cells in the workbook (a chart sheet?): pick a sheet of the list with sheet=", clip(s.name))}}}
	}
	return s, nil
}

// parseHeaderErr is parseHeader with a plain error.
func parseHeaderErr(rec []string, mapping map[string]string, lim Limits) (*header, error) {
	h, err := parseHeader(rec, mapping, lim)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// xlsxRowError is err of reading a sheet's rows, after the row errors
// found before it: a cell's names its data row and its column, by the
// header's name where there is one.
func xlsxRowError(x *expander, h *header, err error) error {
	var ce *cellError
	if !errors.As(err, &ce) {
		if e, ok := asError(err); ok {
			return e
		}
		return err
	}
	col := ""
	if ce.col > 0 {
		col = unnamedColumn(ce.col - 1)
		if h != nil && ce.col <= len(h.names) && h.names[ce.col-1] != "" {
			col = h.names[ce.col-1]
		}
	}
	prior := x.errs[:min(len(x.errs), x.lim.MaxErrors-1)]
	return &Error{Code: CodeMalformedXLSX, Message: fmt.Sprintf("the sheet cannot be read at row %d", max(ce.row-1, 0)),
		Details: append(prior, FieldError{Row: max(ce.row-1, 0), Column: col, Message: clip(ce.Error())})}
}

// asError is err's *Error, if it is one.
func asError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// xmlScan measures XML written to it: the longest run without '<'.
type xmlScan struct {
	maxRun     int64
	run        int64
	runTooLong bool
}

var errRunTooLong = errors.New("ingest: an XML run over its limit")

func (s *xmlScan) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		i := bytes.IndexByte(rest, '<')
		if i < 0 {
			s.run += int64(len(rest))
			break
		}
		s.run += int64(i)
		if s.run > s.maxRun {
			break
		}
		s.run = 0
		rest = rest[i+1:]
	}
	if s.run > s.maxRun {
		s.runTooLong = true
		return 0, errRunTooLong
	}
	return len(p), nil
}
