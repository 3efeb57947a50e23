package ingest

import (
	"fmt"
	"net/http"
)

// Error codes of a rejected upload.
const (
	CodeMalformedCSV   = "malformed_csv"   // 400: the CSV cannot be parsed (broken quoting)
	CodeMalformedJSON  = "malformed_json"  // 400: bad JSON syntax, unknown fields, wrong types
	CodeTooLarge       = "too_large"       // 413: over Limits.MaxBytes or Limits.MaxLookups
	CodeInvalidRows    = "invalid_rows"    // 422: the header or some rows are invalid
	CodeEmptyUpload    = "empty_upload"    // 422: no data rows
	CodeInvalidOptions = "invalid_options" // 422: a job option is invalid
)

// FieldError names where a problem is: Row is the 1-based data row (0 for the
// CSV header, the JSON job fields or the whole upload) and Column the column,
// JSON field or option ("" when the problem is not in one column).
type FieldError struct {
	Row     int    `json:"row"`
	Column  string `json:"column,omitempty"`
	Message string `json:"message"`
}

// Error is a rejected upload. Code is one of the Code constants; Details
// lists up to Limits.MaxErrors field errors, in input order.
type Error struct {
	Code    string       `json:"code"`
	Message string       `json:"message"`
	Details []FieldError `json:"details,omitempty"`
}

func (e *Error) Error() string {
	s := "ingest: " + e.Code + ": " + e.Message
	if len(e.Details) > 0 {
		d := e.Details[0]
		s += fmt.Sprintf(" (first: row %d", d.Row)
		if d.Column != "" {
			s += fmt.Sprintf(", column %q", d.Column)
		}
		s += ": " + d.Message + ")"
	}
	return s
}

// HTTPStatus is the status the API answers with: 400 for unparsable input,
// 413 for too much of it, 422 for input that parses but is invalid.
func (e *Error) HTTPStatus() int {
	switch e.Code {
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeInvalidRows, CodeEmptyUpload, CodeInvalidOptions:
		return http.StatusUnprocessableEntity
	default:
		return http.StatusBadRequest
	}
}

func tooLarge(format string, args ...any) *Error {
	return &Error{Code: CodeTooLarge, Message: fmt.Sprintf(format, args...)}
}

func emptyUpload(msg string) *Error {
	return &Error{Code: CodeEmptyUpload, Message: msg}
}

// sizeString writes a byte limit the way people say it: "64 MiB", "4096 bytes".
func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}
