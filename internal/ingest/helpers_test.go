package ingest

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// at is an expected error position; msg, when set, must occur in the message.
type at struct {
	row int
	col string
	msg string
}

// collect returns an emit that appends to *got.
func collect(got *[]Lookup) func(Lookup) error {
	return func(l Lookup) error {
		*got = append(*got, l)
		return nil
	}
}

// checkResult compares a parse's lookups and error with the expectation:
// code "" means success.
func checkResult(t *testing.T, err error, got, want []Lookup, code string, details []at) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("lookups:\n got %+v\nwant %+v", got, want)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *Error with code %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("code = %s, want %s (%v)", e.Code, code, e)
	}
	if details == nil {
		return
	}
	if len(e.Details) != len(details) {
		t.Fatalf("got %d details, want %d: %+v", len(e.Details), len(details), e.Details)
	}
	for i, d := range details {
		g := e.Details[i]
		if g.Row != d.row || g.Column != d.col || !strings.Contains(g.Message, d.msg) {
			t.Errorf("detail %d = %+v, want row %d column %q message containing %q", i, g, d.row, d.col, d.msg)
		}
	}
}

// countingReader counts the bytes its source gave.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// repeatReader yields n copies of b, without a buffer of that size.
type repeatReader struct {
	b byte
	n int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n)
	for i := range k {
		p[i] = r.b
	}
	r.n -= k
	return int(k), nil
}

// csvErr is ParseCSV for tests that look at the lookups and the error only.
func csvErr(r io.Reader, opts Options, lim Limits, emit func(Lookup) error) error {
	_, err := ParseCSV(r, opts, lim, emit)
	return err
}
