package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

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

type jsonDecoder struct {
	dec  *json.Decoder
	g    *jsonGuard
	lim  Limits
	errs []FieldError
	full bool
}

// fatal maps an error of the json.Decoder that ends decoding.
func (d *jsonDecoder) fatal(err error) error {
	malformed := func(msg string) error {
		return &Error{Code: CodeMalformedJSON, Message: msg, Details: d.errs}
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case d.g.err == errUploadTooLarge:
		return tooLarge("the body is larger than %s", sizeString(d.g.maxTotal))
	case d.g.err == errNotUTF8:
		return malformed(fmt.Sprintf("the body is not valid UTF-8 (at byte %d)", d.g.utf8.bad))
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return malformed("the body ends in the middle of the JSON object")
	case errors.As(err, &se):
		return malformed(fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, strings.TrimPrefix(se.Error(), "json: ")))
	case errors.As(err, &te):
		return malformed(fmt.Sprintf("invalid JSON value at byte %d: %v", te.Offset, strings.TrimPrefix(te.Error(), "json: ")))
	}
	return fmt.Errorf("ingest: reading the body: %w", err)
}

// schema records a shape error; errStop once over MaxErrors.
func (d *jsonDecoder) schema(row int, col, msg string) error {
	if len(d.errs) == d.lim.MaxErrors {
		d.full = true
		return errStop
	}
	d.errs = append(d.errs, FieldError{Row: row, Column: col, Message: msg})
	return nil
}

func (d *jsonDecoder) token() (json.Token, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return nil, d.fatal(err)
	}
	return tok, nil
}

// value decodes the next value into v. On a type mismatch, after which the
// decoder has consumed the value, it returns a message naming path().
func (d *jsonDecoder) value(v any, path func() string, want string) (mismatch string, err error) {
	err = d.dec.Decode(v)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s: expected %s, got %s", path(), want, te.Value), nil
	}
	if err != nil {
		return "", d.fatal(err)
	}
	return "", nil
}

// field decodes the next value into v, recording a type mismatch at row, col.
func (d *jsonDecoder) field(v any, row int, col string, path func() string, want string) error {
	mismatch, err := d.value(v, path, want)
	if err == nil && mismatch != "" {
		err = d.schema(row, col, mismatch)
	}
	return err
}

// wrongType records that the value starting with tok is not what path wants
// and skips the rest of it.
func (d *jsonDecoder) wrongType(tok json.Token, row int, col string, path func() string, want string) error {
	if err := d.schema(row, col, fmt.Sprintf("%s: expected %s, got %s", path(), want, tokenType(tok))); err != nil {
		return err
	}
	depth := 0
	if delim, ok := tok.(json.Delim); ok && (delim == '{' || delim == '[') {
		depth = 1
	}
	for depth > 0 {
		tok, err := d.token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

func tokenType(tok json.Token) string {
	switch tok := tok.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case string:
		return "string"
	case json.Delim:
		if tok == '[' {
			return "array"
		}
		return "object"
	default:
		return "number"
	}
}

func (d *jsonDecoder) skip() error {
	var raw json.RawMessage
	if err := d.dec.Decode(&raw); err != nil {
		return d.fatal(err)
	}
	return nil
}

func (d *jsonDecoder) job() (*JobRequest, error) {
	tok, err := d.dec.Token()
	if err == io.EOF && d.g.err == nil {
		return nil, emptyUpload("the body is empty")
	}
	if err != nil {
		return nil, d.fatal(err)
	}
	if tok != json.Delim('{') {
		return nil, &Error{Code: CodeMalformedJSON, Message: "the body must be a JSON object, not " + tokenType(tok)}
	}
	req := &JobRequest{}
	seen := map[string]bool{}
	for d.dec.More() {
		tok, err := d.token()
		if err != nil {
			return nil, err
		}
		key := tok.(string) // json.Decoder only yields string keys in an object
		if seen[key] {
			err = d.schema(0, key, fmt.Sprintf("field %q appears twice", key))
			if err == nil {
				err = d.skip()
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		seen[key] = true
		path := func() string { return key }
		switch key {
		case "name":
			err = d.field(&req.Name, 0, key, path, "string")
		case "max_age":
			err = d.field(&req.MaxAge, 0, key, path, `string (a duration like "720h" or "30d")`)
		case "callback_url":
			err = d.field(&req.CallbackURL, 0, key, path, "string (an https URL)")
		case "budget_credits":
			err = d.field(&req.BudgetCredits, 0, key, path, "a whole number")
		case "columns":
			err = d.field(&req.Columns, 0, key, path, `object of field to "extra" key ({"company": "Account Name"})`)
		case "roles":
			req.Roles, err = d.strings(key)
		case "lookups":
			req.Lookups, err = d.strings(key)
		case "vendors":
			req.Vendors, err = d.strings(key)
		case "rows":
			req.Rows, err = d.rows()
		case "upload_id":
			err = d.field(&req.UploadID, 0, key, path, "string (the id of POST /v1/uploads)")
		default:
			err = d.schema(0, fieldName(key), unknownField(key, "", jobFields))
			if err == nil {
				err = d.skip()
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if _, err := d.token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := d.dec.Token(); err != io.EOF || d.g.err != nil {
		if d.g.err != nil {
			return nil, d.fatal(err)
		}
		return nil, &Error{Code: CodeMalformedJSON, Message: fmt.Sprintf(
			"unexpected data after the JSON object (at byte %d)", d.dec.InputOffset()), Details: d.errs}
	}
	return req, nil
}

func unknownField(key, place string, known []string) string {
	msg := fmt.Sprintf("unknown field %q (known: %s", clip(key), strings.Join(known, ", "))
	if place != "" {
		msg = place + ": " + msg + `; put your own fields in "extra"`
	}
	return msg + ")"
}

// fieldName is a field name fit for FieldError.Column.
func fieldName(key string) string {
	if len(key) > maxShortChars {
		return clip(key)
	}
	return key
}

// strings decodes an array of strings (or null).
func (d *jsonDecoder) strings(key string) ([]string, error) {
	tok, err := d.token()
	if err != nil || tok == nil {
		return nil, err
	}
	if tok != json.Delim('[') {
		return nil, d.wrongType(tok, 0, key, func() string { return key }, "array of strings")
	}
	var out []string
	for i := 0; d.dec.More(); i++ {
		var s string
		if err := d.field(&s, 0, key, func() string { return fmt.Sprintf("%s[%d]", key, i) }, "string"); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	_, err = d.token()
	return out, err
}

func (d *jsonDecoder) rows() ([]RowIn, error) {
	tok, err := d.token()
	if err != nil || tok == nil {
		return nil, err
	}
	if tok != json.Delim('[') {
		return nil, d.wrongType(tok, 0, "rows", func() string { return "rows" }, "array of row objects")
	}
	var rows []RowIn
	for i := 0; d.dec.More(); i++ {
		if i == d.lim.MaxLookups {
			return nil, tooLarge("the job has more than %d rows, the limit of lookups; split it into smaller jobs", d.lim.MaxLookups)
		}
		row, err := d.row(i)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	_, err = d.token()
	return rows, err
}

func (d *jsonDecoder) row(i int) (RowIn, error) {
	var row RowIn
	place := func() string { return fmt.Sprintf("rows[%d]", i) }
	tok, err := d.token()
	if err != nil {
		return row, err
	}
	if tok != json.Delim('{') {
		return row, d.wrongType(tok, i+1, "", place, "object")
	}
	seen := map[string]bool{}
	for d.dec.More() {
		tok, err := d.token()
		if err != nil {
			return row, err
		}
		key := tok.(string)
		path := func() string { return place() + "." + key }
		var dst *string
		switch key {
		case "ref":
			dst = &row.Ref
		case "profile_url":
			dst = &row.ProfileURL
		case "name":
			dst = &row.Name
		case "company":
			dst = &row.Company
		case "domain":
			dst = &row.Domain
		case "email":
			dst = &row.Email
		case "role":
			dst = &row.Role
		}
		switch {
		case seen[key]:
			err = d.schema(i+1, fieldName(key), fmt.Sprintf("%s: field %q appears twice", place(), clip(key)))
			if err == nil {
				err = d.skip()
			}
		case dst != nil:
			err = d.field(dst, i+1, key, path, "string")
		case key == "extra":
			row.Extra, err = d.extra(i, path)
		default:
			err = d.schema(i+1, fieldName(key), unknownField(key, place(), rowFields))
			if err == nil {
				err = d.skip()
			}
		}
		if err != nil {
			return row, err
		}
		seen[key] = true
	}
	_, err = d.token()
	return row, err
}

// extra decodes a row's "extra": an object of strings, or null. An empty
// object is nil.
func (d *jsonDecoder) extra(i int, path func() string) (map[string]string, error) {
	tok, err := d.token()
	if err != nil || tok == nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, d.wrongType(tok, i+1, "extra", path, "object of strings")
	}
	var m map[string]string
	for d.dec.More() {
		tok, err := d.token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		var s string
		keyPath := func() string { return path() + "[" + strconv.Quote(clip(key)) + "]" }
		mismatch, err := d.value(&s, keyPath, "string")
		if err == nil && mismatch != "" {
			err = d.schema(i+1, extraColumn(key), mismatch)
		}
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			if err := d.schema(i+1, extraColumn(key), fmt.Sprintf("%s: appears twice", keyPath())); err != nil {
				return nil, err
			}
		}
		if m == nil {
			m = map[string]string{}
		}
		m[key] = s
	}
	_, err = d.token()
	return m, err
}

// extraColumn is the FieldError.Column of a JSON row's extra key.
func extraColumn(key string) string { return "extra." + fieldName(key) }

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

// jsonGuard fails past maxTotal bytes and on bytes that are not UTF-8.
type jsonGuard struct {
	r        io.Reader
	total    int64
	maxTotal int64
	utf8     utf8Check
	err      error
}

func (g *jsonGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if rem := g.maxTotal - g.total + 1; int64(len(p)) > rem {
		p = p[:max(rem, 1)]
	}
	n, err := g.r.Read(p)
	g.total += int64(n)
	switch {
	case g.total > g.maxTotal:
		g.err = errUploadTooLarge
	case !g.utf8.write(p[:n]) || err == io.EOF && g.utf8.n > 0:
		g.err = errNotUTF8
	default:
		return n, err
	}
	return 0, g.err
}

// utf8Check validates UTF-8 written to it in pieces.
type utf8Check struct {
	pend [utf8.UTFMax]byte // an incomplete rune at the end of the last piece
	n    int
	off  int64 // offset of the next byte
	bad  int64 // offset of the first invalid byte
}

func (c *utf8Check) write(b []byte) bool {
	for len(b) > 0 {
		if c.n > 0 {
			k := copy(c.pend[c.n:], b)
			buf := c.pend[:c.n+k]
			if !utf8.FullRune(buf) {
				c.n += k
				c.off += int64(k)
				return true
			}
			r, size := utf8.DecodeRune(buf)
			if r == utf8.RuneError && size == 1 {
				c.bad = c.off - int64(c.n)
				return false
			}
			used := size - c.n
			b = b[used:]
			c.off += int64(used)
			c.n = 0
			continue
		}
		i := 0
		for i < len(b) && b[i] < utf8.RuneSelf {
			i++
		}
		b = b[i:]
		c.off += int64(i)
		if len(b) == 0 {
			break
		}
		if !utf8.FullRune(b) {
			c.n = copy(c.pend[:], b)
			c.off += int64(len(b))
			return true
		}
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			c.bad = c.off
			return false
		}
		b = b[size:]
		c.off += int64(size)
	}
	return true
}
