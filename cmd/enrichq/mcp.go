package main

import (
	"context"
	"fmt"
	"io"
	"net/http"

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
		return err
	}
	defer remote.Close()
	srv, err := relayServer(ctx, remote)
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
	if err != nil {
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
	return b.next.RoundTrip(r)
}

// relayServer is an MCP server offering remote's tools and resource
// templates, as remote describes them, and relaying every call to it. A
// call the API cannot answer is a tool error: the assistant's session goes on.
func relayServer(ctx context.Context, remote *mcp.ClientSession) (*mcp.Server, error) {
	init := remote.InitializeResult()
	impl := &mcp.Implementation{Name: "enrichq", Version: version}
	if init != nil && init.ServerInfo != nil {
		impl = init.ServerInfo
	}
	opts := &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{}}
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
				res.SetError(fmt.Errorf("unavailable: the enrichq API did not answer: %v", err))
			}
			return res, nil
		})
	}
	for tmpl, err := range remote.ResourceTemplates(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp: listing the API's resources: %w", err)
		}
		srv.AddResourceTemplate(tmpl, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return remote.ReadResource(ctx, req.Params)
		})
	}
	return srv, nil
}

// nopWriteCloser leaves stdout open when the session ends.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
