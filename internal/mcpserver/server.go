// Package mcpserver is enrichq as an MCP server: the tools and resources an
// AI assistant uses to estimate, submit and follow enrichment jobs within a
// budget (docs/mcp.md). Every tool calls internal/service, the functions
// the REST handlers call, so MCP and REST cannot disagree on money or
// tenancy. What MCP adds is a guard of its own: a job submitted or raised
// through it needs a budget, at most the key's ceiling (budget.go).
//
// A server is built per caller (New): it offers only what the key's scopes
// allow, so a read key does not even see the paid tools. Handler serves it
// over Streamable HTTP; the CLI's `enrichq mcp` serves the same tools over
// stdio by relaying them to that endpoint (proxy.go).
package mcpserver

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
)

// Name is the server's name in the MCP handshake.
const Name = "enrichq"

// Config is what the MCP server needs. Service is required.
type Config struct {
	Service *service.Service
	// MaxBudget is the budget ceiling of a key without one of its own
	// (config.API.MCPMaxBudget); 0 lets such keys spend nothing through MCP.
	MaxBudget int64
	// MaxDailyBudget is the daily ceiling of a key without one of its own
	// (config.API.MCPMaxDailyBudget): what it may commit through MCP in a UTC
	// day. nil: DailyCeilingFactor times the key's per-job ceiling.
	MaxDailyBudget *int64
	// AllowedOrigins are the browser origins (scheme://host[:port], lower
	// case, as config.API.MCPAllowedOrigins has them) whose
	// pages may call Handler; a request with another Origin header is a
	// 403. A request without one (no browser) passes.
	AllowedOrigins []string
	// Log receives what the tools log, and the SDK's warnings and errors
	// (its info lines come with every request); default slog.Default().
	Log *slog.Logger
	// Version is shown in the handshake; default "dev".
	Version string
}

// instructions tell an assistant how the tools fit together.
const instructions = `enrichq looks people and companies up at a paid enrichment vendor, within a credit budget.
Typical use: estimate_job first (what a list costs, in credits from-to, and how long it takes);
then submit_job with a budget_credits the user agreed to (at most this key's ceiling); follow it
with job_status; read what was found with get_results (small pages, the fields you need) or the
resource enrichq://jobs/{id}/results once the job has finished. A job paused by its budget goes on
after raise_budget; cancel_job stops one. A finished job's list is kept fresh by a watch: estimate_watch,
then create_watch with a monthly_cap_credits the user agreed to; run_watch runs one now, watch_changes
lists what changed. vendor_figures says where the money went this month, vendor by vendor.`

// New returns the MCP server of principal p: the read tools and the results
// resources if p holds the read scope, the paid tools if it holds submit.
func New(cfg Config, p service.Principal) *mcp.Server {
	if cfg.Service == nil {
		panic("mcpserver: Config.Service is required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	caps := capabilities(p)
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "enrichq: bulk enrichment within a budget", Version: cfg.Version},
		&mcp.ServerOptions{Instructions: instructions, Logger: sdkLogger(cfg.Log), Capabilities: caps})
	s.AddReceivingMiddleware(onlyDeclared(caps))
	t := &tools{svc: cfg.Service, p: p, defaultCeiling: cfg.MaxBudget, defaultDaily: cfg.MaxDailyBudget, log: cfg.Log}
	if p.Has(domain.ScopeSubmit) {
		t.addSubmitTools(s)
	}
	if p.Has(domain.ScopeRead) {
		t.addStatusTools(s)
		t.addResultTools(s)
		t.addWatchReadTools(s)
		t.addResources(s)
	}
	if p.Has(domain.ScopeSubmit) {
		t.addControlTools(s)
		t.addWatchPaidTools(s)
	}
	return s
}

// capabilities are what the server of p offers: tools (every scope has
// some) and, with read, the results resources. None promises listChanged:
// the lists of a key never change within a session, and a stateless server
// has no stream to push a notification on. (The SDK's default, when tools
// or resources are added, is to promise it.)
func capabilities(p service.Principal) *mcp.ServerCapabilities {
	c := &mcp.ServerCapabilities{}
	if p.Has(domain.ScopeRead) || p.Has(domain.ScopeSubmit) {
		c.Tools = &mcp.ToolCapabilities{}
	}
	if p.Has(domain.ScopeRead) {
		c.Resources = &mcp.ResourceCapabilities{}
	}
	return c
}

// tools carries what every tool handler needs: the service and the caller.
type tools struct {
	svc            *service.Service
	p              service.Principal
	defaultCeiling int64
	defaultDaily   *int64
	log            *slog.Logger
}

// Handler serves MCP over Streamable HTTP for the callers principal finds
// (the API's bearer-key authentication has run before; ok false answers
// 400). It is stateless: each request gets the server of its own key, so
// no session outlives a revoked key or crosses from one key to another, and
// any API replica can answer any request.
//
// In front of the SDK: the Origin check (transport.go; a foreign Origin is
// a 403), the Accept check (a 406 unless both application/json and
// text/event-stream are accepted), and a JSON-RPC -32601 for an unknown
// method. The SDK's own
// DNS-rebinding guard (a request reaching a loopback address with another
// Host is refused) is off: with it on, an API behind a reverse proxy on the
// same host would refuse every MCP request; the Origin check is the rule
// the spec asks for, and every request carries a bearer key a rebinding
// page cannot know.
func Handler(cfg Config, principal func(*http.Request) (service.Principal, bool)) http.Handler {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	sdk := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		p, ok := principal(r)
		if !ok {
			return nil
		}
		return New(cfg, p)
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: sdkLogger(cfg.Log), DisableLocalhostProtection: true,
		MaxRequestBodyBytes: MaxRequestBytes})
	return originGuard{allowed: cfg.AllowedOrigins, next: acceptGuard{next: methodNotFound{next: sdk}}}
}

// sdkLogger passes the SDK's warnings and errors to log. A stateless server
// connects a session per request, and the SDK says so at info level: the
// API's request log already has one line per request.
func sdkLogger(log *slog.Logger) *slog.Logger {
	return slog.New(warnings{log.Handler()})
}

// warnings is a handler that drops records below warning.
type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnings) WithAttrs(a []slog.Attr) slog.Handler { return warnings{w.Handler.WithAttrs(a)} }
func (w warnings) WithGroup(g string) slog.Handler      { return warnings{w.Handler.WithGroup(g)} }
