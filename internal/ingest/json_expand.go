package ingest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ExpandRows validates the rows of a JSON job and calls emit per lookup, in
// order, with ParseCSV's semantics: rows are numbered from 1, a bad row stops
// emitting but not validating (up to lim.MaxErrors details), a nil emit only
// validates. Each value is checked like a CSV cell; "extra" may have at most
// lim.MaxColumns keys, each non-empty and at most 200 bytes. opts.Columns
// takes a field from a key of "extra" (the key then leaves extra); a mapped
// key that no row has is an error.
func ExpandRows(rows []RowIn, opts Options, lim Limits, emit func(Lookup) error) error {
	_, err := ExpandJSON(rows, opts, lim, emit)
	return err
}

// ExpandJSON is ExpandRows that also says what the rows held.
func ExpandJSON(rows []RowIn, opts Options, lim Limits, emit func(Lookup) error) (Summary, error) {
	lim = lim.withDefaults()
	if len(rows) == 0 {
		return Summary{}, emptyUpload(`the job has no rows ("rows": [...])`)
	}
	mapped := map[string]string{} // extra key -> field
	var cols map[string]string    // field -> its place, for messages
	for f, k := range opts.Columns {
		mapped[k] = f
		if cols == nil {
			cols = map[string]string{}
		}
		cols[f] = extraColumn(k)
	}
	found := map[string]bool{}
	for _, r := range rows {
		for k := range mapped {
			if _, ok := r.Extra[k]; ok {
				found[k] = true
			}
		}
	}
	var missing []FieldError
	for k, f := range mapped {
		if !found[k] {
			missing = append(missing, FieldError{Column: "columns", Message: fmt.Sprintf(
				"columns maps %s to %q, which no row has in its \"extra\"", f, clip(k))})
		}
	}
	if len(missing) > 0 {
		slices.SortFunc(missing, func(a, b FieldError) int { return strings.Compare(a.Message, b.Message) })
		return Summary{}, &Error{Code: CodeInvalidRows, Message: "a mapped column is missing", Details: missing}
	}
	extraKeys := map[string]bool{}
	x := &expander{lim: lim, roles: opts.Roles, deferRoles: opts.DeferRoles, emit: emit}
	for i, r := range rows {
		n := i + 1
		var errs []FieldError
		badCell := false
		cell := func(col, v string) string {
			v, msg := checkCell(v, lim.MaxCellBytes, false)
			if msg != "" {
				errs = append(errs, FieldError{Row: n, Column: col, Message: msg})
				badCell = true
			}
			return v
		}
		in := rowIn{
			row:        n,
			ref:        cell(colRef, r.Ref),
			profileURL: cell(colProfileURL, r.ProfileURL),
			name:       cell(colName, r.Name),
			company:    cell(colCompany, r.Company),
			domain:     cell(colDomain, r.Domain),
			email:      cell(colEmail, r.Email),
			role:       cell(colRole, r.Role),
			cols:       cols,
		}
		if len(r.Extra) > lim.MaxColumns {
			errs = append(errs, FieldError{Row: n, Column: "extra", Message: fmt.Sprintf(
				"extra has %d fields; the limit is %d", len(r.Extra), lim.MaxColumns)})
		} else if len(r.Extra) > 0 {
			in.extra = make(map[string]string, len(r.Extra))
			keys := make([]string, 0, len(r.Extra))
			for k := range r.Extra {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				col := extraColumn(k)
				key, msg := checkCell(k, maxRefBytes, false)
				if msg == "" && key == "" {
					msg = "empty"
				}
				if msg != "" {
					errs = append(errs, FieldError{Row: n, Column: col, Message: "key " + msg})
					continue
				}
				if f, ok := mapped[k]; ok {
					in.setField(f, cell(col, r.Extra[k]))
					continue
				}
				v, msg := checkCell(r.Extra[k], lim.MaxCellBytes, true)
				if msg != "" {
					errs = append(errs, FieldError{Row: n, Column: col, Message: msg})
					continue
				}
				if !extraKeys[k] {
					// The job's extra keys are its CSV export's columns: capped
					// per job, not only per row.
					if len(extraKeys) >= lim.MaxColumns {
						errs = append(errs, FieldError{Row: n, Column: col, Message: fmt.Sprintf(
							"one extra key too many: a job's rows may have at most %d distinct extra keys in all", lim.MaxColumns)})
						continue
					}
					extraKeys[k] = true
				}
				in.extra[k] = v
			}
			if len(in.extra) == 0 {
				in.extra = nil
			}
		}
		in.badCell = badCell
		err := x.row(in, errs)
		if err == errStop {
			return Summary{}, x.result("", n)
		}
		if err != nil {
			return Summary{}, err
		}
	}
	if err := x.result("", 0); err != nil {
		return Summary{}, err
	}
	s := Summary{Rows: x.rows, Lookups: x.lookups, Columns: map[string]string{}, Extra: slices.Sorted(maps.Keys(extraKeys)),
		RowsNeedingRoles: x.needRoles}
	for k, f := range mapped {
		s.Columns[k] = f
	}
	return s, nil
}
