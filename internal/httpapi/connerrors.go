package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// JSONErrorsListener wraps ln so that the answers net/http's server writes
// itself, before any handler runs (a request line or header it cannot
// parse: 400; headers over the limit: 431; an unsupported HTTP version or
// transfer encoding), are in the API's JSON error shape like every other
// answer, instead of Go's text/plain. The server writes each such answer in
// one Write with fixed headers (errorHeaders) that no handler's answer has
// (those carry a Date and put Connection before Content-Type), which is how
// it is told apart; everything else passes untouched.
func JSONErrorsListener(ln net.Listener) net.Listener { return errorsListener{ln} }

type errorsListener struct{ net.Listener }

func (l errorsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &errorsConn{Conn: c}, nil
}

// errorHeaders are the headers net/http's server gives its own error answers.
const errorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

type errorsConn struct {
	net.Conn
}

func (c *errorsConn) Write(b []byte) (int, error) {
	if out, ok := jsonServerError(b); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// jsonServerError rewrites one of net/http's own error answers; ok false
// when b is not one.
func jsonServerError(b []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(b, []byte("HTTP/1.1 "))
	if !ok {
		return nil, false
	}
	statusLine, body, ok := bytes.Cut(rest, []byte(errorHeaders))
	if !ok || bytes.ContainsAny(statusLine, "\r\n") || len(statusLine) < 3 {
		return nil, false
	}
	code, err := strconv.Atoi(string(statusLine[:3]))
	if err != nil || code < 400 || code > 599 {
		return nil, false
	}
	detail := strings.TrimSpace(string(body))
	if _, after, found := strings.Cut(detail, ": "); found {
		detail = after // "400 Bad Request: invalid header name" → "invalid header name"
	} else {
		detail = ""
	}
	var errCode, msg string
	switch code {
	case http.StatusRequestHeaderFieldsTooLarge:
		errCode, msg = "headers_too_large", "the request's headers are larger than the server takes"
	case http.StatusBadRequest:
		errCode, msg = "malformed_request", "the request could not be read as HTTP"
	default:
		errCode, msg = "malformed_request", "the server cannot take this request"
	}
	if detail != "" {
		msg += ": " + detail
	}
	js, _ := json.Marshal(errorBody{Error: errorJSON{Code: errCode, Message: msg}})
	js = append(js, '\n')
	out := fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Length: %d\r\nContent-Type: application/json\r\n\r\n",
		code, http.StatusText(code), len(js))
	return append(out, js...), true
}
