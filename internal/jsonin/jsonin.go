// Package jsonin reads the small JSON documents clients send: the JSON
// bodies of the API's routes (but the job body, which internal/ingest
// streams) and the arguments of the MCP tools. One reader for every door, so
// that none lets through what another refuses.
//
// Decode refuses, before anything is stored or looked up:
//   - a document that is not UTF-8 or not one JSON value;
//   - a control character (Unicode Cc: U+0000 to U+001F, U+007F to U+009F)
//     in any string, key or value: no field of the API holds one, and
//     Postgres refuses U+0000 in text (SQLSTATE 22021), which would answer 500;
//   - a field the target struct does not have;
//   - null, anywhere but where the target is an interface or a type that
//     reads JSON itself (json.RawMessage, a json.Unmarshaler): encoding/json
//     would take null as "leave as is", so that {"lookups": null} passed for
//     a list the schema says is never null, and {"email": "x", "name": null}
//     for a request named one way only;
//   - a value of the wrong type, a fraction or an integer too large where a
//     whole number is wanted: numbers decode exactly (never through float64).
//
// Every refusal is an *Error naming the field ("members[2]", "rows[0].company")
// in words a client can act on, never Go's types.
package jsonin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Error is a document refused. Field is where ("" for the whole document);
// Syntax is true when the document is not JSON at all (or not UTF-8), false
// when it is JSON with a value that cannot be taken.
type Error struct {
	Field   string
	Message string
	Syntax  bool
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Decode decodes data, one JSON value, into v (a pointer), as the package
// comment says.
func Decode(data []byte, v any) error {
	if err := Check(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, reflect.TypeOf(v))
	}
	if _, err := dec.Token(); err != io.EOF {
		return &Error{Message: "more than one JSON value", Syntax: true}
	}
	return refuseNull(data, reflect.TypeOf(v))
}

// Check checks that data is one JSON value, UTF-8, with no control
// character in any of its strings. Decode checks this first; Check is for
// a document that is then read in parts (json.RawMessage).
func Check(data []byte) error {
	if !utf8.Valid(data) {
		return &Error{Message: fmt.Sprintf("not valid UTF-8 (at byte %d)", firstInvalid(data)), Syntax: true}
	}
	if !bytes.Contains(data, []byte(`\u`)) && !hasControl(string(data)) {
		// Raw control characters below U+0020 are not JSON inside a string;
		// escaped ones come as \u: without either, no string holds one. The
		// decoder still checks the syntax.
		if !json.Valid(data) {
			return syntaxError(data)
		}
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := walker{dec: dec}
	if err := w.value(""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return &Error{Message: "more than one JSON value", Syntax: true}
	}
	return nil
}

// CheckString returns "" or what is wrong with s as a value a client sent:
// not UTF-8, or a control character.
func CheckString(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Sprintf("contains the control character %U", r)
		}
	}
	return ""
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// walker walks a document's tokens, keeping the path of the value it reads.
type walker struct{ dec *json.Decoder }

func (w walker) value(path string) error {
	tok, err := w.dec.Token()
	if err != nil {
		return tokenError(err)
	}
	switch t := tok.(type) {
	case string:
		if msg := CheckString(t); msg != "" {
			return &Error{Field: path, Message: msg}
		}
	case json.Delim:
		switch t {
		case '{':
			for w.dec.More() {
				tok, err := w.dec.Token()
				if err != nil {
					return tokenError(err)
				}
				key, _ := tok.(string)
				field := join(path, key)
				if msg := CheckString(key); msg != "" {
					return &Error{Field: join(path, strconv.Quote(key)), Message: "the key " + msg}
				}
				if err := w.value(field); err != nil {
					return err
				}
			}
		case '[':
			for i := 0; w.dec.More(); i++ {
				if err := w.value(fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
		if _, err := w.dec.Token(); err != nil { // the closing delimiter
			return tokenError(err)
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func tokenError(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se) && strings.Contains(se.Error(), "after top-level value"):
		return &Error{Message: "more than one JSON value", Syntax: true}
	case errors.As(err, &se) && strings.Contains(se.Error(), "unexpected end of JSON input"):
		return &Error{Message: "the JSON ends in the middle of a value", Syntax: true}
	case errors.As(err, &se):
		return &Error{Message: fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: ")), Syntax: true}
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Message: "the JSON ends in the middle of a value", Syntax: true}
	}
	return &Error{Message: "invalid JSON", Syntax: true}
}

func syntaxError(data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		return &Error{Message: "invalid JSON", Syntax: true}
	}
	return tokenError(err)
}

func firstInvalid(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(data)
}

// decodeError says an error of json.Decoder.Decode in the client's words.
func decodeError(err error, target reflect.Type) error {
	var (
		te *json.UnmarshalTypeError
		se *json.SyntaxError
	)
	switch {
	case errors.As(err, &te):
		field := te.Field
		want := kindWords(te.Type)
		if field == "" {
			return &Error{Message: fmt.Sprintf("the document must be %s, not %s", want, te.Value)}
		}
		if isInt(te.Type) && strings.HasPrefix(te.Value, "number") {
			lit := strings.TrimSpace(strings.TrimPrefix(te.Value, "number"))
			return &Error{Field: field, Message: wholeNumberMessage(lit, te.Type)}
		}
		return &Error{Field: field, Message: fmt.Sprintf("must be %s, not %s", want, valueWords(te.Value))}
	case errors.As(err, &se):
		return tokenError(err)
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Message: "the JSON ends in the middle of a value", Syntax: true}
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name, _ := strconv.Unquote(f)
		if name == "" {
			name = f
		}
		return &Error{Field: name, Message: "is not a field here" + fieldsOf(target)}
	}
	return &Error{Message: "invalid JSON: " + strings.TrimPrefix(msg, "json: "), Syntax: true}
}

// wholeNumberMessage says why the number lit is no whole number of type t.
func wholeNumberMessage(lit string, t reflect.Type) string {
	lo, hi := intRange(t)
	if f, err := strconv.ParseFloat(lit, 64); err == nil && f == math.Trunc(f) && !math.IsInf(f, 0) {
		return fmt.Sprintf("%s is out of range: give a whole number from %d to %d", clip(lit), lo, hi)
	}
	return fmt.Sprintf("%s is not a whole number: give a whole number from %d to %d", clip(lit), lo, hi)
}

func intRange(t reflect.Type) (int64, uint64) {
	switch t.Kind() {
	case reflect.Int8:
		return math.MinInt8, math.MaxInt8
	case reflect.Int16:
		return math.MinInt16, math.MaxInt16
	case reflect.Int32:
		return math.MinInt32, math.MaxInt32
	case reflect.Int, reflect.Int64:
		return math.MinInt64, math.MaxInt64
	case reflect.Uint8:
		return 0, math.MaxUint8
	case reflect.Uint16:
		return 0, math.MaxUint16
	case reflect.Uint32:
		return 0, math.MaxUint32
	}
	return 0, math.MaxUint64
}

func isInt(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64
}

// kindWords names the JSON a Go type takes.
func kindWords(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a JSON value"
}

// valueWords names the JSON value encoding/json describes ("number 1.5",
// "string", "array", "object", "bool").
func valueWords(v string) string {
	switch {
	case strings.HasPrefix(v, "number"):
		return "a number"
	case v == "string":
		return "a string"
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case v == "bool":
		return "true or false"
	}
	return v
}

// fieldsOf lists the JSON fields of a struct type, for an unknown field's message.
func fieldsOf(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return ""
	}
	var names []string
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			names = append(names, name)
		}
	}
	walk(t)
	if len(names) == 0 {
		return ""
	}
	return "; the fields are " + strings.Join(names, ", ")
}

func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:40] + "…"
}
