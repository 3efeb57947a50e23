package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
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
// ("JSON RPC not handled"), which a client cannot match to its call.
// Anything else passes as the SDK answers it.
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
			http.Error(w, fmt.Sprintf("the request is larger than %d bytes; upload a long list (POST /v1/uploads) and give its upload_id", mbe.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "the request body could not be read", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	msg, err := jsonrpc.DecodeMessage(body)
	call, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || !call.IsCall() {
		m.next.ServeHTTP(w, r)
		return
	}
	c := &catchText400{ResponseWriter: w}
	m.next.ServeHTTP(c, r)
	if c.caught {
		if bytes.Contains(c.body.Bytes(), []byte("not handled")) {
			writeRPCError(w, http.StatusOK, call.ID, jsonrpc.CodeMethodNotFound, fmt.Sprintf("method not found: %q", clip(call.Method)))
			return
		}
		writeRPCError(w, http.StatusBadRequest, call.ID, jsonrpc.CodeInvalidRequest, "invalid request: "+strings.TrimSpace(c.body.String()))
	}
}

// catchText400 holds back a plain-text 400 (the SDK's refusal of a
// request it could not take); every other answer goes through.
type catchText400 struct {
	http.ResponseWriter
	caught bool
	body   bytes.Buffer
}

func (c *catchText400) WriteHeader(code int) {
	if code == http.StatusBadRequest && strings.HasPrefix(c.Header().Get("Content-Type"), "text/plain") {
		c.caught = true
		c.Header().Del("Content-Type")
		c.Header().Del("X-Content-Type-Options")
		return
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *catchText400) Write(b []byte) (int, error) {
	if c.caught {
		return c.body.Write(b)
	}
	return c.ResponseWriter.Write(b)
}

func (c *catchText400) Unwrap() http.ResponseWriter { return c.ResponseWriter }

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
