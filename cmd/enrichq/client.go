package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// client speaks to the API at base with key.
type client struct {
	base *url.URL
	key  string
	hc   *http.Client
}

func newClient(base *url.URL, key string) *client {
	// No overall timeout: uploads and result downloads take as long as they
	// take. Calls that answer at once get callTimeout through their context.
	return &client{base: base, key: key, hc: &http.Client{}}
}

// callTimeout bounds a call that is not an upload or a download.
const callTimeout = time.Minute

// apiError is an error answer of the API:
// {"error": {"code", "message", "details": [{"row", "column", "message"}]}}.
type apiError struct {
	Status  int
	Code    string       `json:"code"`
	Message string       `json:"message"`
	Details []fieldError `json:"details"`
}

type fieldError struct {
	Row     int    `json:"row"`
	Column  string `json:"column"`
	Message string `json:"message"`
}

// Error is one line: status, code, the message, and the first detail with
// its row and column.
func (e *apiError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s: %s", e.Status, e.Code, oneLine(e.Message))
	if len(e.Details) > 0 {
		d := e.Details[0]
		b.WriteString(": ")
		if d.Row > 0 {
			fmt.Fprintf(&b, "row %d, ", d.Row)
		}
		if d.Column != "" {
			fmt.Fprintf(&b, "column %s: ", d.Column)
		}
		b.WriteString(oneLine(d.Message))
		if n := len(e.Details) - 1; n > 0 {
			fmt.Fprintf(&b, " (and %d more)", n)
		}
	}
	return b.String()
}

// transient reports whether trying again later may work: the API could not
// be reached, or it said it is busy or unavailable.
func transient(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		switch ae.Status {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	var ne *netError
	return errors.As(err, &ne)
}

// netError is a call that got no answer.
type netError struct {
	base string
	err  error
}

func (e *netError) Error() string {
	return fmt.Sprintf("cannot reach the API at %s: %v", e.base, e.err)
}
func (e *netError) Unwrap() error { return e.err }

// oneLine folds a message on one line and bounds it.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "…"
	}
	return s
}

// do sends a request to path (under the base URL) with query q. An answer
// of 400 or more is returned as *apiError, with its body read and closed.
func (c *client) do(ctx context.Context, method, path string, q url.Values, body io.Reader, header http.Header) (*http.Response, error) {
	u := *c.base
	u.Path += path
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if f, ok := body.(*os.File); ok {
		// A file's size is known: send it, rather than a chunked body.
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if off, err := f.Seek(0, io.SeekCurrent); err == nil {
				req.ContentLength = fi.Size() - off
			}
		}
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("User-Agent", "enrichq-cli")
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &netError{base: c.base.Redacted(), err: err}
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		return nil, readAPIError(resp)
	}
	return resp, nil
}

// readAPIError reads an error answer. One that is not the API's JSON shape
// (a proxy's page) is reported with its status and the start of its body.
func readAPIError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var body struct {
		Error *apiError `json:"error"`
	}
	if json.Unmarshal(data, &body) == nil && body.Error != nil && body.Error.Message != "" {
		body.Error.Status = resp.StatusCode
		if body.Error.Code == "" {
			body.Error.Code = strings.ToLower(strings.ReplaceAll(http.StatusText(resp.StatusCode), " ", "_"))
		}
		return body.Error
	}
	msg := oneLine(string(data))
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return &apiError{Status: resp.StatusCode, Code: "http_error", Message: msg}
}

// getJSON GETs path and decodes the JSON answer into out.
func (c *client) getJSON(ctx context.Context, path string, q url.Values, out any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.do(ctx, http.MethodGet, path, q, nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decodeJSON(resp, out)
}

// postJSON POSTs body (nil for none) to path and decodes the answer into out.
func (c *client) postJSON(ctx context.Context, path string, body any, out any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var r io.Reader
	var h http.Header
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r, h = strings.NewReader(string(b)), http.Header{"Content-Type": {"application/json"}}
	}
	resp, err := c.do(ctx, http.MethodPost, path, nil, r, h)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decodeJSON(resp, out)
}

func decodeJSON(resp *http.Response, out any) error {
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("the API answered %s %s with a body that is not the JSON expected: %v",
			resp.Request.Method, resp.Request.URL.Path, err)
	}
	return nil
}

// jobPath is the API path of a job, or of one of its sub-resources.
func jobPath(id string, sub ...string) string {
	p := "/v1/jobs/" + url.PathEscape(id)
	for _, s := range sub {
		p += "/" + s
	}
	return p
}

// readSince reads a positioned list (the feed, the audit log: ?since=&limit=,
// answered {field: [...], "next_since": SEQ}) after since, handing each item
// to each, until a page comes back empty or max items are read (0: all). A
// page may end before limit (it is bounded in bytes too), so only an empty
// page ends the list. It returns the items read and the position to go on from.
func (c *client) readSince(ctx context.Context, path, field string, since int64, max int, each func(json.RawMessage) error) (int, int64, error) {
	next, n := since, 0
	for max == 0 || n < max {
		limit := 1000
		if max > 0 {
			limit = min(limit, max-n)
		}
		var page map[string]json.RawMessage
		q := url.Values{"since": {strconv.FormatInt(next, 10)}, "limit": {strconv.Itoa(limit)}}
		if err := c.getJSON(ctx, path, q, &page); err != nil {
			return n, next, err
		}
		var items []json.RawMessage
		var after int64
		if err := json.Unmarshal(page[field], &items); err != nil {
			return n, next, fmt.Errorf("%s: the API's page has no %q list: %w", path, field, err)
		}
		if err := json.Unmarshal(page["next_since"], &after); err != nil {
			return n, next, fmt.Errorf("%s: the API's page has no next_since: %w", path, err)
		}
		if len(items) == 0 {
			break
		}
		for _, it := range items {
			if err := each(it); err != nil {
				return n, next, err
			}
		}
		n += len(items)
		next = after
	}
	return n, next, nil
}
