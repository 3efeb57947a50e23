package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

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
