package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// version is shown to MCP clients.
const version = "dev"

// runMCP is `enrichq mcp`: an MCP server on stdin and stdout, for a desktop
// assistant to start. It offers what the API's /mcp offers this key (the
// tools and the results resources) and relays every call there, so the
// API's checks (scopes, tenancy, the budget ceiling) hold whichever door an
// assistant uses. Nothing but JSON-RPC goes to stdout.
func runMCP(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "mcp", "mcp [flags]")
	if _, err := f.parse(args, 0); err != nil {
		return helpOK(err)
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	remote, err := c.mcpSession(ctx)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
			return fmt.Errorf("mcp: the API at %s refused the key (ENRICHQ_API_KEY or --key): it is unknown, revoked or mistyped", c.base.Redacted())
		}
		if errors.As(err, &ae) {
			return fmt.Errorf("mcp: the API at %s refused the connection: %w", c.base.Redacted(), ae)
		}
		return err
	}
	defer remote.Close()
	srv, err := relayServer(ctx, remote, c.base.Redacted())
	if err != nil {
		return err
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(e.stdin), Writer: nopWriteCloser{e.stdout}}
	if err := srv.Run(ctx, t); err != nil && ctx.Err() == nil {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

// mcpSession connects to the API's /mcp with the client's key.
func (c *client) mcpSession(ctx context.Context) (*mcp.ClientSession, error) {
	endpoint := *c.base
	endpoint.Path += "/mcp"
	hc := &http.Client{Transport: bearer{key: c.key, host: c.base.Host, next: http.DefaultTransport},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cl := mcp.NewClient(&mcp.Implementation{Name: "enrichq-cli", Version: version}, nil)
	// The API's /mcp is stateless: no stream of its own to open.
	s, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint.String(), HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return nil, ae
	case err != nil:
		return nil, &netError{base: c.base.Redacted(), err: err}
	}
	return s, nil
}

// bearer adds the API key to requests for the API's host, and only there.
type bearer struct {
	key, host string
	next      http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != b.host {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	r.Header.Set("User-Agent", "enrichq-cli")
	resp, err := b.next.RoundTrip(r)
	if err != nil || resp.StatusCode < 400 || strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && !isAPIError(resp) {
		return resp, err
	}
	// The API's own refusal (a revoked key, a foreign origin, a proxy's
	// page): an *apiError the relay words for the assistant, instead of the
	// SDK's "rejected by transport: Bad Request". A JSON-RPC error answer
	// goes on to the SDK, which reads it.
	defer resp.Body.Close()
	return nil, readAPIError(resp)
}

// isAPIError tells the API's JSON error ({"error": {"code", ...}}) from a
// JSON-RPC answer ({"jsonrpc": "2.0", ...}), peeking at the body.
func isAPIError(resp *http.Response) bool {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body = io.NopCloser(bytes.NewReader(data))
	var body struct {
		JSONRPC string `json:"jsonrpc"`
	}
	return json.Unmarshal(data, &body) != nil || body.JSONRPC == ""
}

// relayServer is an MCP server offering remote's tools and resource
// templates, as remote describes them, and relaying every call to it. A
// call the API cannot answer is a tool error: the assistant's session goes on.
func relayServer(ctx context.Context, remote *mcp.ClientSession, base string) (*mcp.Server, error) {
	init := remote.InitializeResult()
	impl := &mcp.Implementation{Name: "enrichq", Version: version}
	if init != nil && init.ServerInfo != nil {
		impl = init.ServerInfo
	}
	// The API's capabilities as they are: the relay can push no more
	// notifications than the API can (none: no listChanged).
	caps := &mcp.ServerCapabilities{}
	if init != nil && init.Capabilities != nil {
		if init.Capabilities.Tools != nil {
			caps.Tools = &mcp.ToolCapabilities{}
		}
		if init.Capabilities.Resources != nil {
			caps.Resources = &mcp.ResourceCapabilities{}
		}
	}
	opts := &mcp.ServerOptions{Capabilities: caps}
	if init != nil {
		opts.Instructions = init.Instructions
	}
	srv := mcp.NewServer(impl, opts)
	for tool, err := range remote.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp: listing the API's tools: %w", err)
		}
		srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := remote.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments, Meta: req.Params.Meta})
			if err != nil {
				res = &mcp.CallToolResult{}
				res.SetError(relayError(err, base))
			}
			return res, nil
		})
	}
	for tmpl, err := range remote.ResourceTemplates(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp: listing the API's resources: %w", err)
		}
		srv.AddResourceTemplate(tmpl, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			res, err := remote.ReadResource(ctx, req.Params)
			var rpc *jsonrpc.Error
			if err != nil && !errors.As(err, &rpc) {
				return nil, relayError(err, base)
			}
			return res, err
		})
	}
	return srv, nil
}

// relayError says why a relayed call failed, in the assistant's words: the
// API's refusal (the key, the origin) or its answer; the API not answering.
// The SDK's plumbing ("rejected by transport") stays out of it.
func relayError(err error, base string) error {
	var (
		ae     *apiError
		rpc    *jsonrpc.Error
		urlErr *url.Error
	)
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusUnauthorized:
		return fmt.Errorf("unauthorized: the enrichq API at %s refused the key (ENRICHQ_API_KEY or --key): it is unknown or was revoked", base)
	case errors.As(err, &ae) && transient(ae):
		return fmt.Errorf("unavailable: the enrichq API at %s is busy or unavailable (%d %s); try again in a few seconds", base, ae.Status, ae.Code)
	case errors.As(err, &ae):
		return fmt.Errorf("refused: the enrichq API at %s refused the call: %s", base, ae.Error())
	case errors.As(err, &urlErr), errors.Is(err, context.DeadlineExceeded):
		// No answer: the SDK wraps it in its own "rejected by transport".
	case errors.As(err, &rpc):
		return fmt.Errorf("refused: the enrichq API refused the call: %s", rpc.Message)
	}
	return fmt.Errorf("unavailable: the enrichq API at %s did not answer; try again when it is back", base)
}

// nopWriteCloser leaves stdout open when the session ends.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
