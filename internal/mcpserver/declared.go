package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// onlyDeclared is a receiving middleware that answers a method of a
// capability the server did not declare with -32601, as a method nobody
// knows: the SDK serves prompts/list, logging/setLevel, resources/list and
// the like whatever the capabilities say, and a client that probes them
// would take an empty answer for a feature. Notifications pass (nothing
// answers them); methods of no capability (initialize, ping) pass.
func onlyDeclared(c *mcp.ServerCapabilities) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if !declared(c, method) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %q", clip(method))}
			}
			return next(ctx, method, req)
		}
	}
}

// declared tells whether method belongs to a capability of c, or to none.
func declared(c *mcp.ServerCapabilities, method string) bool {
	subscribe := c.Resources != nil && c.Resources.Subscribe
	switch {
	case strings.HasPrefix(method, "notifications/"):
		return true
	case method == "tools/list" || method == "tools/call":
		return c.Tools != nil
	case method == "resources/list" || method == "resources/read" || method == "resources/templates/list":
		return c.Resources != nil
	case method == "resources/subscribe" || method == "resources/unsubscribe":
		return subscribe
	case method == "subscriptions/listen":
		// The stream of list and resource changes: nothing to listen to
		// unless something may change.
		return subscribe || (c.Resources != nil && c.Resources.ListChanged) || (c.Tools != nil && c.Tools.ListChanged) ||
			(c.Prompts != nil && c.Prompts.ListChanged)
	case strings.HasPrefix(method, "prompts/"):
		return c.Prompts != nil
	case strings.HasPrefix(method, "logging/"):
		return c.Logging != nil
	case strings.HasPrefix(method, "completion/"):
		return c.Completions != nil
	}
	return true
}
