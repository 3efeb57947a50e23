package upstream_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/upstream"
)

const secret = "sk_live_kit-secret"

func caller(maxBody int64, hc *http.Client) *upstream.Caller {
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	return &upstream.Caller{HTTP: upstream.NoRedirects(hc), UserAgent: "kit-test", MaxBody: maxBody, Secret: secret}
}

func kitError(t *testing.T, err error) *upstream.Error {
	t.Helper()
	var e *upstream.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want an *upstream.Error", err)
	}
	if strings.Contains(e.Message, secret) || strings.Contains(e.Error(), secret) {
		t.Fatalf("error text holds the secret: %q", e.Error())
	}
	return e
}

func TestCallSendsHeadersAndBody(t *testing.T) {
	var got *http.Request
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		b := make([]byte, 64)
		n, _ := r.Body.Read(b)
		body = string(b[:n])
		w.Header().Set("X-Answer", "yes")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+secret)
	resp, err := caller(100, nil).Do(t.Context(), upstream.Request{Method: http.MethodPost, URL: srv.URL + "/x", Header: h, Body: []byte(`{"a":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 || string(resp.Body) != `{"ok":true}` || resp.Header.Get("X-Answer") != "yes" || resp.Resent {
		t.Fatalf("resp = %+v", resp)
	}
	if got.Header.Get("Authorization") != "Bearer "+secret || got.Header.Get("User-Agent") != "kit-test" || body != `{"a":1}` {
		t.Fatalf("request headers %v, body %q", got.Header, body)
	}
}

func TestCallTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	resp, err := caller(100, &http.Client{Timeout: 20 * time.Millisecond}).Do(t.Context(), upstream.Request{Method: http.MethodGet, URL: srv.URL})
	e := kitError(t, err)
	if resp != nil || e.Code != "timeout" || e.Status != 0 {
		t.Fatalf("resp %v, err %+v: want a timeout", resp, e)
	}
}

func TestCallTransportCodes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	url := srv.URL
	srv.Close() // refused from now on

	_, err := caller(100, nil).Do(t.Context(), upstream.Request{Method: http.MethodGet, URL: url})
	if e := kitError(t, err); e.Code != "network_error" || e.Sent || e.Err == nil {
		t.Fatalf("refused connection: %+v", e)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = caller(100, nil).Do(ctx, upstream.Request{Method: http.MethodGet, URL: url})
	if e := kitError(t, err); e.Code != "canceled" || !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled context: %+v", e)
	}

	ctx, cancel = context.WithDeadline(t.Context(), time.Unix(0, 0))
	defer cancel()
	_, err = caller(100, nil).Do(ctx, upstream.Request{Method: http.MethodGet, URL: url})
	if e := kitError(t, err); e.Code != "timeout" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("past deadline: %+v", e)
	}
}

func TestCallOversizedBody(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(strings.Repeat("x", 11)))
	}))
	defer srv.Close()
	resp, err := caller(10, nil).Do(t.Context(), upstream.Request{Method: http.MethodGet, URL: srv.URL})
	e := kitError(t, err)
	if resp == nil || resp.Status != 200 || e.Code != upstream.CodeTooLarge || e.Status != 200 || !e.Sent || e.Message != "answer longer than 10 bytes" {
		t.Fatalf("resp %v, err %+v: want response_too_large with the answer's status", resp, e)
	}

	status = http.StatusInternalServerError // an error answer is classed by its status, not refused
	resp, err = caller(10, nil).Do(t.Context(), upstream.Request{Method: http.MethodGet, URL: srv.URL})
	if err != nil || resp.Status != 500 || len(resp.Body) != 11 {
		t.Fatalf("error answer: resp %+v, err %v", resp, err)
	}

	status = http.StatusCreated // Whole: only a 200 is the answer
	c := caller(10, nil)
	c.Whole = upstream.OnlyOK
	if resp, err = c.Do(t.Context(), upstream.Request{Method: http.MethodGet, URL: srv.URL}); err != nil || resp.Status != 201 {
		t.Fatalf("201 with OnlyOK: resp %+v, err %v", resp, err)
	}
}

func TestCallCutBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = w.Write([]byte("short"))
	}))
	defer srv.Close()
	resp, err := caller(1000, nil).Do(t.Context(), upstream.Request{Method: http.MethodGet, URL: srv.URL})
	e := kitError(t, err)
	if resp == nil || e.Code != "network_error" || e.Status != 200 || !e.Sent {
		t.Fatalf("resp %v, err %+v: want a transport error of a sent call with the answer's status", resp, e)
	}
}

func TestCallErrorTextRedactedAndClipped(t *testing.T) {
	method := "BAD METHOD " + secret + strings.Repeat(" \x00"+secret, 50)
	resp, err := caller(100, nil).Do(t.Context(), upstream.Request{Method: method, URL: "http://127.0.0.1:1/"})
	e := kitError(t, err)
	if resp != nil || e.Code != upstream.CodeInvalidRequest || e.Sent {
		t.Fatalf("resp %v, err %+v: want invalid_request, not sent", resp, e)
	}
	if !strings.HasPrefix(e.Message, "cannot build the request: ") || !strings.Contains(e.Message, "[REDACTED]") ||
		len(e.Message) > len("cannot build the request: ")+303 || strings.ContainsAny(e.Message, "\x00\n") {
		t.Fatalf("message %q: want one clipped line, the secret redacted", e.Message)
	}
}

func TestCallFollowsNoRedirect(t *testing.T) {
	var reached bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			reached = true
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	hc := &http.Client{Timeout: 5 * time.Second} // follows redirects itself
	resp, err := caller(100, hc).Do(t.Context(), upstream.Request{Method: http.MethodGet, URL: srv.URL + "/start"})
	if err != nil || resp.Status != http.StatusFound || reached {
		t.Fatalf("resp %+v, err %v, target reached %v: want the 302 itself", resp, err, reached)
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\t\x00c", 10, "a b c"},
		{"abcdef", 3, "abc..."},
		{"ééé", 3, "é..."}, // never cuts a rune
		{"  ", 5, ""},
	} {
		if got := upstream.Clip(c.in, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestRedact(t *testing.T) {
	if got := upstream.Redact("key "+secret+" and "+secret, secret); got != "key [REDACTED] and [REDACTED]" {
		t.Fatalf("Redact = %q", got)
	}
	if got := upstream.Redact("text", ""); got != "text" {
		t.Fatalf("Redact with no secret = %q", got)
	}
}
