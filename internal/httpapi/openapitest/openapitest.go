// Package openapitest checks the API's answers against its OpenAPI document
// (internal/httpapi/openapi.json, given as bytes so that httpapi's own
// tests can use it too) with kin-openapi: the document itself is
// valid OpenAPI, and every answer a test receives through Transport has a
// status the operation lists and a body its schema allows. A test that
// drives the API through it keeps the document true; a fuzzer driven by the
// document then calls valid what the API takes.
//
// It is for tests only: no binary imports it.
package openapitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Document loads and validates an OpenAPI document (the API's:
// httpapi.OpenAPIDocument()).
func Document(data []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.json is not valid OpenAPI %s: %w", doc.OpenAPI, err)
	}
	return doc, nil
}

var decoders sync.Once

// Checker checks answers against the document.
type Checker struct {
	doc    *openapi3.T
	router routers.Router
}

// New loads the document data (the API's: httpapi.OpenAPIDocument()); the
// test fails if it is not valid.
func New(t testing.TB, data []byte) *Checker {
	t.Helper()
	doc, err := Document(data)
	if err != nil {
		t.Fatal(err)
	}
	// The servers of the document name the public host; answers come from a
	// test server on loopback: route by path alone.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("openapi.json: routes: %v", err)
	}
	decoders.Do(func() {
		// Line-delimited JSON and HTML are read as text: their schemas are strings.
		openapi3filter.RegisterBodyDecoder("application/x-ndjson", openapi3filter.FileBodyDecoder)
		openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.FileBodyDecoder)
	})
	return &Checker{doc: doc, router: router}
}

// Check checks one answer to req: its status is one the operation lists and
// its body matches the schema of its status and content type. body is the
// answer's body, read. A request that is no operation of the document (an
// unknown path or method) is not checked.
func (c *Checker) Check(req *http.Request, status int, header http.Header, body []byte) error {
	route, params, err := c.router.FindRoute(req)
	if errors.Is(err, routers.ErrPathNotFound) || errors.Is(err, routers.ErrMethodNotAllowed) {
		// No operation: the API's own 404 and 405, which no operation lists.
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		return fmt.Errorf("%s %s answered %d, which openapi.json does not allow: %v\nbody: %s", req.Method, req.URL.Path, status, err, clip(body))
	}
	return nil
}

// Transport returns a RoundTripper that checks every answer of next (nil:
// http.DefaultTransport) and fails t on one the document does not allow.
// The answer goes on to the caller unchanged.
func (c *Checker) Transport(t testing.TB, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper{c: c, t: t, next: next}
}

type roundTripper struct {
	c    *Checker
	t    testing.TB
	next http.RoundTripper
}

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err := rt.c.Check(req, resp.StatusCode, resp.Header, body); err != nil {
		rt.t.Errorf("%v", err)
	}
	return resp, nil
}

func clip(b []byte) string {
	s := string(b)
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
