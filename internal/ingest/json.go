package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/enrichq/enrichq/internal/jsonin"
)

// JobRequest is the JSON body of POST /v1/jobs. DecodeJSON fills it; its
// Options method validates the job options and ExpandRows the rows.
type JobRequest struct {
	Name          string   `json:"name,omitempty"`
	Rows          []RowIn  `json:"rows"`
	Roles         []string `json:"roles,omitempty"`
	Vendors       []string `json:"vendors,omitempty"`
	Lookups       []string `json:"lookups,omitempty"`
	BudgetCredits *int64   `json:"budget_credits,omitempty"`
	MaxAge        string   `json:"max_age,omitempty"`
	CallbackURL   string   `json:"callback_url,omitempty"`
	// Columns maps a field to a key of the rows' "extra" that holds it.
	Columns map[string]string `json:"columns,omitempty"`
	// UploadID names a stored upload that takes the place of Rows: exactly
	// one of them is given.
	UploadID string `json:"upload_id,omitempty"`
}

// RowIn is one row of a JSON job, as given.
type RowIn struct {
	Ref        string            `json:"ref,omitempty"`
	ProfileURL string            `json:"profile_url,omitempty"`
	Name       string            `json:"name,omitempty"`
	Company    string            `json:"company,omitempty"`
	Domain     string            `json:"domain,omitempty"`
	Email      string            `json:"email,omitempty"`
	Role       string            `json:"role,omitempty"`
	Extra      map[string]string `json:"extra,omitempty"`
}

var (
	jobFields = []string{"name", "rows", "upload_id", "roles", "vendors", "lookups", "budget_credits", "max_age", "callback_url", "columns"}
	rowFields = []string{"ref", "profile_url", "name", "company", "domain", "email", "role", "extra"}

	errNotUTF8 = errors.New("ingest: body is not UTF-8")
)

// DecodeJSON decodes a JSON job body of at most lim.MaxBytes (a UTF-8 BOM is
// ignored). It streams the rows and checks the shape: the body is one JSON
// object and nothing after it, valid UTF-8, field names are exact (unknown
// fields are rejected, naming the field and the row), and each value has its
// type (a wrong one is named by its place: "rows[3].company: expected string,
// got number" is row 4, column company). null is the same as an absent field.
// It collects up to lim.MaxErrors such errors (code malformed_json). More rows
// than lim.MaxLookups is too_large, no rows is empty_upload. It does not
// validate values: see ExpandRows and JobRequest.Options.
func DecodeJSON(r io.Reader, lim Limits) (*JobRequest, error) {
	lim = lim.withDefaults()
	r, bomLen, err := stripBOM(r)
	if err != nil {
		return nil, err
	}
	g := &jsonGuard{r: r, total: bomLen, maxTotal: lim.MaxBytes}
	dec := json.NewDecoder(g)
	dec.UseNumber() // Token must not fail on a number too large for float64
	d := &jsonDecoder{dec: dec, g: g, lim: lim}
	req, err := d.job()
	if err == errStop || err == nil && len(d.errs) > 0 {
		msg := "the JSON body does not match the job schema"
		if d.full {
			msg += fmt.Sprintf("; stopped after %d errors", len(d.errs))
		}
		return nil, &Error{Code: CodeMalformedJSON, Message: msg, Details: d.errs}
	}
	if err != nil {
		return nil, err
	}
	if errs := controlsIn(req); len(errs) > 0 {
		return nil, &Error{Code: CodeMalformedJSON, Message: "the JSON body holds a control character", Details: errs}
	}
	switch {
	case req.UploadID != "" && len(req.Rows) > 0:
		return nil, &Error{Code: CodeInvalidOptions, Message: "invalid job options", Details: []FieldError{{Column: "upload_id",
			Message: `give "rows" or "upload_id", not both`}}}
	case len(req.Rows) == 0 && req.UploadID == "":
		return nil, emptyUpload(`the job has no rows ("rows": [...], or "upload_id" of a stored upload)`)
	}
	return req, nil
}

// controlsIn refuses a control character in the job's own strings, as
// jsonin refuses them in every other JSON body (the rows' values are checked
// cell by cell, checkCell).
func controlsIn(req *JobRequest) []FieldError {
	var errs []FieldError
	check := func(col, v string) {
		if msg := jsonin.CheckString(v); msg != "" {
			errs = append(errs, FieldError{Column: col, Message: col + " " + msg})
		}
	}
	check("name", req.Name)
	check("max_age", req.MaxAge)
	check("callback_url", req.CallbackURL)
	check("upload_id", req.UploadID)
	for i, v := range req.Roles {
		check(fmt.Sprintf("roles[%d]", i), v)
	}
	for i, v := range req.Lookups {
		check(fmt.Sprintf("lookups[%d]", i), v)
	}
	for i, v := range req.Vendors {
		check(fmt.Sprintf("vendors[%d]", i), v)
	}
	for _, f := range slices.Sorted(maps.Keys(req.Columns)) {
		check("columns", f)
		check("columns."+clip(f), req.Columns[f])
	}
	return errs
}
