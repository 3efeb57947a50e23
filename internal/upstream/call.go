package upstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
)

// Caller makes the HTTP calls of one upstream client, each the same way:
// build the request, send it under the client's timeout, read a bounded
// body, and turn what went wrong into an [*Error] whose text holds no
// secret and fits on a line. What each client keeps to itself is its
// headers and what its upstream's statuses mean.
type Caller struct {
	// HTTP sends the calls; it should follow no redirect ([NoRedirects]).
	HTTP *http.Client
	// UserAgent is sent as User-Agent.
	UserAgent string
	// MaxBody bounds how much of an answer is read (> 0).
	MaxBody int64
	// Secret (the API key, the member's token) is removed from every
	// error's text: an upstream, or a transport error, may echo it.
	Secret string
	// Whole says which statuses' bodies are the answer: for those, a body
	// cut short or longer than MaxBody is an error. Others (an upstream's
	// error answers) are returned with what could be read, to be classed
	// by their status. Nil: every 2xx.
	Whole func(status int) bool
}

// Request is one call.
type Request struct {
	Method string
	URL    string
	Header http.Header // the client's own (key, version, idempotency key...)
	Body   []byte      // nil: none
}

// Response is an answer that came: its status, headers and body (at most
// MaxBody bytes).
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// Resent: the request was written more than once (http.Transport
	// re-sends a request it deems idempotent after a reset of a reused
	// connection), so the first send may have done the work too.
	Resent bool
}

// Error codes of [Error] besides [TransportCode]'s.
const (
	CodeInvalidRequest = "invalid_request"    // the request could not be built
	CodeTooLarge       = "response_too_large" // a whole answer over MaxBody
)

// Error is a call that got no usable answer: it could not be built
// (CodeInvalidRequest), it got no complete answer (a [TransportCode]), or
// its answer was longer than the bound (CodeTooLarge).
type Error struct {
	Code string
	// Message is the cause's text, the secret redacted, on one short line.
	Message string
	// Status is the answer's status when one came (a body cut short or too
	// long), else 0.
	Status int
	// Sent: the request was written, so the upstream may have done the work.
	Sent bool
	// Err is the cause (for errors.Is: context.Canceled ...); nil for
	// CodeTooLarge. Its text is not part of Error().
	Err error
}

// Error is the code and the message.
func (e *Error) Error() string { return "upstream: " + e.Code + ": " + e.Message }

// Unwrap is the cause.
func (e *Error) Unwrap() error { return e.Err }

// Do makes one call. err is an [*Error]. resp is nil when no answer came
// (the request could not be built or sent); with a body of a Whole status
// cut short or too long, both resp (its status and headers) and err are
// returned.
func (c *Caller) Do(ctx context.Context, r Request) (*Response, error) {
	var rd io.Reader
	if r.Body != nil {
		rd = bytes.NewReader(r.Body)
	}
	var writes atomic.Int32 // one: the upstream may have done the work; more: re-sent
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { writes.Add(1) },
	})
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, rd)
	if err != nil {
		return nil, c.fail(&Error{Code: CodeInvalidRequest, Message: "cannot build the request: " + ErrText(err), Err: err})
	}
	for k, vs := range r.Header {
		req.Header[k] = vs
	}
	req.Header.Set("User-Agent", c.UserAgent)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, c.fail(&Error{Code: TransportCode(err), Message: ErrText(err), Sent: writes.Load() > 0, Err: err})
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.MaxBody+1))
	_ = resp.Body.Close()
	out := &Response{Status: resp.StatusCode, Header: resp.Header, Body: data, Resent: writes.Load() > 1}
	if !c.whole(resp.StatusCode) {
		return out, nil // an error answer cut short or too long is still classed by its status
	}
	switch {
	case err != nil: // the answer was cut: the work was done, its result is lost
		return out, c.fail(&Error{Code: TransportCode(err), Message: ErrText(err), Status: resp.StatusCode, Sent: true, Err: err})
	case int64(len(data)) > c.MaxBody:
		return out, &Error{Code: CodeTooLarge, Message: fmt.Sprintf("answer longer than %d bytes", c.MaxBody), Status: resp.StatusCode, Sent: true}
	}
	return out, nil
}

func (c *Caller) whole(status int) bool {
	if c.Whole == nil {
		return status >= 200 && status <= 299
	}
	return c.Whole(status)
}

func (c *Caller) fail(e *Error) *Error {
	e.Message = Redact(e.Message, c.Secret)
	return e
}

// OnlyOK is a [Caller.Whole] for an upstream whose answers are a 200.
func OnlyOK(status int) bool { return status == http.StatusOK }
