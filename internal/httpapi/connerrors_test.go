package httpapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// What net/http's server answers itself, before any handler (a header it
// cannot parse, headers over the limit, a bad request line), is in the
// API's JSON error shape on the API's listener; ordinary answers pass
// untouched.
func TestServerOwnErrorsAreJSON(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "a handler's own answer")
	}), Timeouts{}, slogTo(io.Discard))
	srv.MaxHeaderBytes = 4 << 10
	go func() { _ = srv.Serve(JSONErrorsListener(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })

	raw := func(req string) (*http.Response, []byte) {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%.60q: %v", req, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	for _, c := range []struct {
		name, req string
		status    int
		code      string
	}{
		{"a control byte in a header name", "GET /v1/jobs HTTP/1.1\r\nHost: x\r\nBad\x01Name: y\r\n\r\n", 400, "malformed_request"},
		{"a control byte in a header value", "GET /v1/jobs HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", 400, "malformed_request"},
		{"no Host", "GET /v1/jobs HTTP/1.1\r\n\r\n", 400, "malformed_request"},
		{"a malformed request line", "GET\r\n\r\n", 400, "malformed_request"},
		{"headers over the limit", "GET /v1/jobs HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431, "headers_too_large"},
	} {
		resp, body := raw(c.req)
		var e errorBody
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &e) != nil ||
			e.Error.Code != c.code || e.Error.Message == "" {
			t.Errorf("%s: %s %q %q", c.name, resp.Status, resp.Header.Get("Content-Type"), body)
		}
	}
	// A handler's answer passes as it was written, even a plain-text 400.
	resp, body := raw("GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || string(body) != "a handler's own answer" {
		t.Errorf("a handler's answer: %s %q %q", resp.Status, resp.Header.Get("Content-Type"), body)
	}
}
