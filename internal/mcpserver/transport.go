package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MaxRequestBytes bounds a request to /mcp: a thousand inline rows fit.
const MaxRequestBytes = 4 << 20

// originGuard refuses a request whose Origin header is present and not
// allowed: the spec's rule against DNS rebinding (a page of another site
// that makes the browser reach this server under a name the attacker
// controls). A request without Origin is not from a browser's page (an
// assistant's client, curl) and passes. The request's own Host cannot
// vouch for its Origin: under rebinding the two agree, which is the
// attack, so only the operator's list counts.
type originGuard struct {
	allowed []string
	next    http.Handler
}

func (g originGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	origins := r.Header.Values("Origin")
	if len(origins) == 0 {
		g.next.ServeHTTP(w, r)
		return
	}
	if o := strings.ToLower(strings.TrimSuffix(origins[0], "/")); len(origins) == 1 && slices.Contains(g.allowed, o) {
		g.next.ServeHTTP(w, r)
		return
	}
	msg := fmt.Sprintf("forbidden: requests from the web page of origin %q are not allowed here; an operator allows an origin with ENRICHQ_MCP_ALLOWED_ORIGINS", clip(origins[0]))
	writeRPCError(w, http.StatusForbidden, nil, jsonrpc.CodeInvalidRequest, msg)
}

// methodNotFound answers a call of a method the SDK does not know with the
// JSON-RPC error -32601, as JSON-RPC and the MCP spec want. Before the
// protocol version 2026-07-28 the SDK answers it with a plain-text HTTP 400
// ("JSON RPC not handled"), which a client cannot match to its call. Every
// other plain-text refusal of the SDK (a body that is not JSON-RPC, a
// Content-Type that is not application/json) becomes a JSON-RPC error with
// the same status, and the call's id when there is one: every answer of
// /mcp is JSON.
type methodNotFound struct{ next http.Handler }

func (m methodNotFound) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Body == nil {
		m.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeRPCError(w, http.StatusRequestEntityTooLarge, nil, jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("the request is larger than %d bytes; upload a long list (POST /v1/uploads) and give its upload_id", mbe.Limit))
			return
		}
		writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "the request body could not be read")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var id any
	msg, decodeErr := jsonrpc.DecodeMessage(body)
	call, isCall := msg.(*jsonrpc.Request)
	isCall = decodeErr == nil && isCall && call.IsCall()
	if isCall {
		id = call.ID
	}
	c := &catchText{ResponseWriter: w}
	m.next.ServeHTTP(c, r)
	if !c.caught {
		return
	}
	text := strings.TrimSpace(c.body.String())
	switch {
	case isCall && c.status == http.StatusBadRequest && strings.Contains(text, "not handled"):
		writeRPCError(w, http.StatusOK, id, jsonrpc.CodeMethodNotFound, fmt.Sprintf("method not found: %q", clip(call.Method)))
	case decodeErr != nil && c.status == http.StatusBadRequest:
		writeRPCError(w, c.status, nil, jsonrpc.CodeParseError, "parse error: "+text)
	default:
		writeRPCError(w, c.status, id, jsonrpc.CodeInvalidRequest, "invalid request: "+text)
	}
}

// catchText holds back a plain-text 4xx (the SDK's refusal of a request it
// could not take); every other answer goes through.
type catchText struct {
	http.ResponseWriter
	caught bool
	status int
	body   bytes.Buffer
}

func (c *catchText) WriteHeader(code int) {
	if code >= 400 && code < 500 && strings.HasPrefix(c.Header().Get("Content-Type"), "text/plain") {
		c.caught, c.status = true, code
		c.Header().Del("Content-Type")
		c.Header().Del("X-Content-Type-Options")
		return
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *catchText) Write(b []byte) (int, error) {
	if c.caught {
		return c.body.Write(b)
	}
	return c.ResponseWriter.Write(b)
}

func (c *catchText) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// writeRPCError writes a JSON-RPC error answer; id nil (null) when it
// answers no call in particular.
func writeRPCError(w http.ResponseWriter, status int, id any, code int64, msg string) {
	var body struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	body.JSONRPC, body.ID = "2.0", id
	if rid, ok := id.(jsonrpc.ID); ok {
		body.ID = rid.Raw()
	}
	body.Error.Code, body.Error.Message = code, msg
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// acceptGuard reads Accept one way, the Streamable HTTP transport's: the
// client must accept both application/json and text/event-stream. The
// header's media ranges count as RFC 9110 says (*/*, application/* and
// text/* cover them; parameters and case do not matter; q=0 refuses one);
// a request without an Accept header, or with one that leaves either type
// out, is a 406 with a JSON-RPC error. (The SDK's own check ignores q and
// answers a plain-text 400.)
type acceptGuard struct{ next http.Handler }

func (g acceptGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	values := r.Header.Values("Accept")
	if acceptable(values, "application", "json") && acceptable(values, "text", "event-stream") {
		g.next.ServeHTTP(w, r)
		return
	}
	writeRPCError(w, http.StatusNotAcceptable, nil, jsonrpc.CodeInvalidRequest,
		`not acceptable: the Accept header must accept both application/json and text/event-stream (send "Accept: application/json, text/event-stream")`)
}

// acceptable tells whether the Accept values accept typ/sub: the most
// specific media range that matches it decides, and q=0 means not
// acceptable.
func acceptable(values []string, typ, sub string) bool {
	best, ok := -1, false
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mediaRange, params, _ := strings.Cut(part, ";")
			t, s, found := strings.Cut(strings.ToLower(strings.TrimSpace(mediaRange)), "/")
			if !found {
				continue
			}
			s = strings.TrimSpace(s)
			var rank int
			switch {
			case t == typ && s == sub:
				rank = 2
			case t == typ && s == "*":
				rank = 1
			case t == "*" && s == "*":
				rank = 0
			default:
				continue
			}
			if rank > best {
				best, ok = rank, qualityAbove0(params)
			} else if rank == best && !qualityAbove0(params) {
				ok = false
			}
		}
	}
	return ok
}

// qualityAbove0 reads the q parameter of a media range's parameters
// ("q=0.5; level=1"): absent is 1.
func qualityAbove0(params string) bool {
	for _, p := range strings.Split(params, ";") {
		k, v, _ := strings.Cut(p, "=")
		if strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err != nil || q > 0
		}
	}
	return true
}
