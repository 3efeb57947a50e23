package ingest

import (
	"fmt"
	"strings"
)

// Summary is what an upload held: the answer's "rows_uploaded", "columns" and
// "extra_columns".
type Summary struct {
	Rows    int               // data rows that were not blank
	Lookups int               // lookups after role expansion
	Columns map[string]string // header -> field, for the columns that map to a field
	Extra   []string          // headers kept as extra columns, in file order (JSON: the extra keys, sorted)
	// RowsNeedingRoles are the company-only rows left without a lookup for
	// want of roles (Options.DeferRoles).
	RowsNeedingRoles int
}

// header maps the columns of a table (CSV or sheet) to fields.
type header struct {
	names  []string          // trimmed, original case; "" for an unnamed column
	fields []string          // the field per column, or "" (an extra column)
	cols   map[string]string // field -> header
}

// parseHeader checks a header record and maps its columns (see
// assignColumns).
func parseHeader(rec []string, mapping map[string]string, lim Limits) (*header, *Error) {
	headerErr := func(msg string, d ...FieldError) *Error {
		return &Error{Code: CodeInvalidRows, Message: msg, Details: d}
	}
	if len(rec) > lim.MaxColumns {
		return nil, headerErr("the header has too many columns", FieldError{Message: fmt.Sprintf(
			"the header has %d columns; the limit is %d", len(rec), lim.MaxColumns)})
	}
	h := &header{names: make([]string, len(rec))}
	var errs []FieldError
	seen := make(map[string]int, len(rec))
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
	}
	if len(errs) == 0 {
		h.fields, errs = assignColumns(h.names, mapping)
	}
	if len(errs) == 0 {
		h.cols = map[string]string{}
		for i, f := range h.fields {
			if f != "" {
				h.cols[f] = h.names[i]
			}
		}
		hasKey := false
		for _, f := range keyFields {
			_, ok := h.cols[f]
			hasKey = hasKey || ok
		}
		if !hasKey {
			errs = append(errs, FieldError{Message: fmt.Sprintf(
				"the first row must be a header naming at least one of profile_url, email, name, company, domain (or a header a CRM uses for one, like \"Company Name\" or \"Website\"; see docs/uploads.md), or map one with columns=field:Header; found: %s",
				headerList(h.names))})
		}
	}
	if len(errs) > 0 {
		return nil, headerErr("the header is invalid", errs[:min(len(errs), lim.MaxErrors)]...)
	}
	return h, nil
}

func unnamedColumn(i int) string { return fmt.Sprintf("column %d", i+1) }

// record checks one data record at row and hands it to x. A record with
// more fields than the header is an error; fewer is one only in a CSV
// (strict says so): a sheet leaves trailing empty cells out.
func (h *header) record(x *expander, row int, rec []string) error {
	if blank(rec) {
		return nil // spreadsheets export empty rows as ",,,"
	}
	if len(rec) > len(h.names) || len(rec) < len(h.names) && x.strict {
		x.rows++
		return x.fail(FieldError{Row: row, Message: fmt.Sprintf(
			"the row has %d fields; the header has %d", len(rec), len(h.names))})
	}
	var cellErrs []FieldError
	in := h.row(row, rec, x.lim, &cellErrs)
	return x.row(in, cellErrs)
}

// row checks the cells of one record with at most as many fields as the
// header and returns the row's values; cell errors are appended to errs.
func (h *header) row(row int, rec []string, lim Limits, errs *[]FieldError) rowIn {
	in := rowIn{row: row, cols: h.cols}
	for i, c := range rec {
		field, name := h.fields[i], h.names[i]
		col := name
		if col == "" {
			col = unnamedColumn(i)
		}
		v, msg := checkCell(c, lim.MaxCellBytes, field == "")
		if msg == "" && name == "" && v != "" {
			msg = "a value in a column without a header name"
		}
		if msg != "" {
			*errs = append(*errs, FieldError{Row: row, Column: col, Message: msg})
			in.badCell = in.badCell || field != ""
			continue
		}
		if field != "" {
			in.setField(field, v)
			continue
		}
		if name == "" {
			continue
		}
		if in.extra == nil {
			in.extra = make(map[string]string, len(rec))
		}
		in.extra[name] = v
	}
	return in
}

// summary is what the table held once x has seen every row.
func (h *header) summary(x *expander) Summary {
	s := Summary{Rows: x.rows, Lookups: x.lookups, Columns: map[string]string{}, Extra: []string{}, RowsNeedingRoles: x.needRoles}
	for i, n := range h.names {
		switch {
		case h.fields[i] != "":
			s.Columns[n] = h.fields[i]
		case n != "":
			s.Extra = append(s.Extra, n)
		}
	}
	return s
}

func blank(rec []string) bool {
	for _, c := range rec {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}
