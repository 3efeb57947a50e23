package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/xuri/excelize/v2"
)

// CodeMalformedXLSX is a 400: the upload is not an .xlsx workbook we can read.
const CodeMalformedXLSX = "malformed_xlsx"

// Bounds of a workbook, from the upload's limits: what it may unzip to in
// all, and how long a run of XML without a tag may be (one cell's text, its
// entities escaped, or one tag's attributes).
func xlsxUnzipLimit(lim Limits) int64 { return 16 * lim.MaxBytes }
func xlsxMaxRun(lim Limits) int64     { return 6*int64(lim.MaxCellBytes) + 4096 }

// xlsxMaxSharedStrings bounds the shared string table: excelize keeps an
// index entry (about 40 bytes) per string, and a sheet within the limits has
// no use for more strings than four per lookup.
func xlsxMaxSharedStrings(lim Limits) int64 { return 4*int64(lim.MaxLookups) + 1024 }

// ParseXLSX reads the sheet opts.Sheet (the first when "") of the .xlsx
// workbook in the file path, with ParseCSV's semantics: the first row is the
// header, a row's number is its sheet row less one, blank rows are skipped,
// emit gets each lookup while no row is bad. Its temporary files go to tmpDir
// and are removed before it returns. It stops with ctx.
//
// Before excelize opens the workbook, a scan of its zip checks what excelize
// cannot bound by itself (scanXLSX: the parts, their sizes told and true,
// the size of one cell's XML, the number of shared strings), and excelize
// reads a copy of only the parts it needs.
func ParseXLSX(ctx context.Context, path, tmpDir string, opts Options, lim Limits, emit func(Lookup) error) (Summary, error) {
	lim = lim.withDefaults()
	fi, err := os.Stat(path)
	if err != nil {
		return Summary{}, fmt.Errorf("ingest: the workbook: %w", err)
	}
	if fi.Size() > lim.MaxBytes {
		return Summary{}, tooLarge("the upload is larger than %s", sizeString(lim.MaxBytes))
	}
	dir, err := os.MkdirTemp(tmpDir, "xlsx-")
	if err != nil {
		return Summary{}, fmt.Errorf("ingest: a directory for the workbook: %w", err)
	}
	defer os.RemoveAll(dir) // excelize leaves its files behind when opening fails
	kept := filepath.Join(dir, "kept.xlsx")
	if err := scanXLSXFile(path, kept, lim); err != nil {
		return Summary{}, err
	}
	f, err := excelize.OpenFile(kept, excelize.Options{
		RawCellValue:      true, // the stored text: "12345", not a number format's "1.23E+04"
		UnzipSizeLimit:    xlsxUnzipLimit(lim),
		UnzipXMLSizeLimit: xlsxXMLInMemory,
		TmpDir:            dir,
	})
	if err != nil {
		return Summary{}, malformedXLSX(err)
	}
	defer f.Close()

	sheets := f.GetSheetList()
	sheet := opts.Sheet
	switch {
	case len(sheets) == 0:
		return Summary{}, emptyUpload("the workbook has no sheet")
	case sheet == "":
		sheet = sheets[0]
	default:
		found := false
		for _, s := range sheets {
			if strings.EqualFold(s, sheet) {
				sheet, found = s, true
				break
			}
		}
		if !found {
			return Summary{}, &Error{Code: CodeInvalidOptions, Message: "invalid job options", Details: []FieldError{{Column: "sheet",
				Message: fmt.Sprintf("the workbook has no sheet %q (its sheets: %s)", clip(opts.Sheet), headerList(sheets))}}}
		}
	}
	rows, err := f.Rows(sheet)
	if err != nil {
		return Summary{}, malformedXLSX(err)
	}
	defer rows.Close()

	var h *header
	x := &expander{lim: lim, roles: opts.Roles, deferRoles: opts.DeferRoles, emit: emit}
	sheetRow := 0
	for rows.Next() {
		sheetRow++
		if sheetRow%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return Summary{}, fmt.Errorf("ingest: reading the workbook: %w", err)
			}
		}
		rec, err := rows.Columns(excelize.Options{RawCellValue: true})
		if err != nil {
			return Summary{}, xlsxRowError(x, sheetRow-1, err)
		}
		if h == nil {
			if blank(rec) {
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
	if err := rows.Error(); err != nil {
		return Summary{}, xlsxRowError(x, sheetRow, err)
	}
	if h == nil {
		return Summary{}, emptyUpload(fmt.Sprintf("the sheet %q is empty", sheet))
	}
	if err := x.result("the sheet has a header but no data rows", 0); err != nil {
		return Summary{}, err
	}
	return h.summary(x), nil
}

// parseHeaderErr is parseHeader with a plain error.
func parseHeaderErr(rec []string, mapping map[string]string, lim Limits) (*header, error) {
	h, err := parseHeader(rec, mapping, lim)
	if err != nil {
		return nil, err
	}
	return h, nil
}

func malformedXLSX(err error) error {
	msg := "the upload is not an .xlsx workbook that can be read"
	switch {
	case errors.Is(err, excelize.ErrWorkbookFileFormat), errors.Is(err, excelize.ErrWorkbookPassword):
		msg = "the workbook is encrypted or not an .xlsx (an old .xls? save it as .xlsx or CSV)"
	case strings.Contains(err.Error(), "unzip size"):
		return tooLarge("the workbook unzips to more than its limit: save it as CSV, or split it")
	}
	return &Error{Code: CodeMalformedXLSX, Message: msg, Details: []FieldError{{Message: clip(err.Error())}}}
}

func xlsxRowError(x *expander, row int, err error) error {
	prior := x.errs[:min(len(x.errs), x.lim.MaxErrors-1)]
	return &Error{Code: CodeMalformedXLSX, Message: fmt.Sprintf("the sheet cannot be read at row %d", row),
		Details: append(prior, FieldError{Row: row, Message: clip(err.Error())})}
}

// xmlScan measures XML written to it: the longest run without '<', and the
// number of shared string items (<si> elements, with or without a prefix).
type xmlScan struct {
	maxRun     int64
	run        int64
	runTooLong bool
	items      int64
	tail       []byte // the last bytes of the previous write, for a tag split between writes
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
	// Items whole in p, then those that straddle the previous write and p.
	s.items += countItems(p)
	if len(s.tail) > 0 {
		seam := append(s.tail, p[:min(len(p), 3)]...)
		s.items += countItems(seam)
	}
	// Keep the last three bytes: an item's mark has four, so none is counted twice.
	if len(p) >= 3 {
		s.tail = append(s.tail[:0], p[len(p)-3:]...)
	} else {
		s.tail = append(s.tail, p...)
		s.tail = s.tail[max(0, len(s.tail)-3):]
	}
	return len(p), nil
}

// countItems counts the shared string items' marks in b: "<si>", "<si " and
// "<si/" with or without a namespace prefix (a prefixed closing tag counts
// too: more, never fewer).
func countItems(b []byte) int64 {
	var n int
	for _, m := range [][]byte{[]byte("<si>"), []byte("<si "), []byte("<si/"), []byte(":si>"), []byte(":si "), []byte(":si/")} {
		n += bytes.Count(b, m)
	}
	return int64(n)
}
