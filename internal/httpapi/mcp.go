package httpapi

import (
	"net/http"

	"github.com/enrichq/enrichq/internal/mcpserver"
	"github.com/enrichq/enrichq/internal/service"
)

// mcpHandler is POST /mcp: the MCP server of the request's key
// (internal/mcpserver), over the service the REST routes call. The SDK
// answers the JSON-RPC; a tool's error is a tool result, not an HTTP status.
func (s *server) mcpHandler() http.HandlerFunc {
	h := mcpserver.Handler(mcpserver.Config{Service: s.svc, MaxBudget: s.MCPMaxBudget, MaxDailyBudget: s.MCPMaxDailyBudget,
		AllowedOrigins: s.MCPAllowedOrigins, Log: s.Log, Version: s.Version},
		func(r *http.Request) (service.Principal, bool) {
			p := principalFrom(r.Context())
			return p, p.Tenant != ""
		})
	return h.ServeHTTP
}
