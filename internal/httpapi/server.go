// Package httpapi is enrichq's submit API over HTTP: jobs in (JSON, CSV or
// multipart uploads), status and results out. The whole surface is in
// routes.go; errors become statuses in one place, writeError.
//
// The handlers read requests and write answers; what a key may do and how
// is internal/service's, which they call, the platform's routes
// (platform.go) too: the package imports neither the store nor
// internal/jobs (doors_test.go checks it). It holds no state of its own.
package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/enrichq/enrichq/internal/metrics"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/web"
)

// Deps is what the API needs. Service and Keys are required.
type Deps struct {
	// Service is what every route calls (cmd/api builds it): the upload
	// limits, the status cache and the platform are its.
	Service *service.Service
	// Keys maps API keys to their principals (tenant, key id, scopes).
	Keys Keys
	// Ready are the dependencies GET /readyz checks (Postgres, Redis);
	// none means always ready.
	Ready []ReadyCheck
	// Log receives the request log and the details of internal errors;
	// default slog.Default().
	Log *slog.Logger
	// Now is the clock of the platform's answers (expires_in_seconds) and the
	// web page; default time.Now.
	Now func() time.Time
	// UploadIdleTimeout is how long an upload may send nothing before it is
	// rejected with 408; default 30s. Every read extends the deadline.
	UploadIdleTimeout time.Duration
	// UploadTimeout bounds a whole upload, however steadily it trickles;
	// default 10m.
	UploadTimeout time.Duration
	// Metrics counts requests by route pattern and status; nil records nothing.
	Metrics *metrics.HTTP
	// SpoolDir is where uploads that need a file (an .xlsx) are spooled;
	// "" is the system's temporary directory.
	SpoolDir string
	// WebSession bounds a session of the web page (/ui/, internal/web);
	// zero fields take web.DefaultSessionMax and web.DefaultSessionIdle.
	WebSession service.SessionLifetime
	// BehindTLSProxy: browsers reach the API over HTTPS through a proxy
	// that ends TLS (config.API.BehindTLSProxy): the web page's cookies are
	// Secure and its answers carry HSTS (web.Config.BehindTLSProxy).
	BehindTLSProxy bool
	// MCPMaxBudget is the MCP budget ceiling of a key without its own
	// (config.API.MCPMaxBudget, mcp.go); 0: such keys spend nothing through MCP.
	MCPMaxBudget int64
	// MCPMaxDailyBudget is the daily MCP ceiling of a key without its own
	// (config.API.MCPMaxDailyBudget); nil: 5 times the key's per-job ceiling.
	MCPMaxDailyBudget *int64
	// MCPAllowedOrigins are the browser origins /mcp serves besides its own
	// (config.API.MCPAllowedOrigins); a request with another Origin is a 403.
	MCPAllowedOrigins []string
	// Version is the build's version, shown to MCP clients; "" is "dev".
	Version string
}

// Defaults of Deps.
const (
	DefaultUploadIdleTimeout = 30 * time.Second
	DefaultUploadTimeout     = 10 * time.Minute
)

type server struct {
	Deps
	mux *http.ServeMux
	svc *service.Service // every /v1/jobs and /v1/results route is a call of it
	ui  *web.UI          // the web page's routes (/ and /ui/)
	// rules are openapi.json's parameters of each route (strict.go)
	rules map[string]routeRule
	mcp   http.HandlerFunc // POST /mcp (mcp.go)
}

// NewServer returns the API's handler: every route of routes.go behind
// request logging and panic recovery.
func NewServer(deps Deps) http.Handler {
	if deps.Service == nil || deps.Keys == nil {
		panic("httpapi: Deps.Service and Deps.Keys are required")
	}
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.UploadIdleTimeout <= 0 {
		deps.UploadIdleTimeout = DefaultUploadIdleTimeout
	}
	if deps.UploadTimeout <= 0 {
		deps.UploadTimeout = DefaultUploadTimeout
	}
	svc := deps.Service
	s := &server{Deps: deps, mux: http.NewServeMux(), svc: svc, rules: routeRules(openAPIDoc)}
	s.ui = web.New(web.Config{Service: svc, Keys: deps.Keys, Session: deps.WebSession, Log: deps.Log, Now: deps.Now,
		BehindTLSProxy: deps.BehindTLSProxy,
		SignedIn: func(ctx context.Context, p service.Principal) {
			if info := infoFrom(ctx); info != nil {
				info.tenant = p.Tenant
			}
		}})
	s.mcp = s.mcpHandler()
	s.routes()
	return s.logRequests(s.recoverPanics(http.HandlerFunc(s.dispatch)))
}

// dispatch serves the mux, answering its own 404 and 405 in JSON.
func (s *server) dispatch(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	iw := &unmatchedWriter{ResponseWriter: w}
	s.mux.ServeHTTP(iw, r)
	switch iw.status {
	case http.StatusMethodNotAllowed:
		s.writeError(w, r, errorf(http.StatusMethodNotAllowed, "method_not_allowed",
			"%s is not allowed here; allowed: %s", r.Method, w.Header().Get("Allow")))
	case http.StatusNotFound:
		s.writeError(w, r, errorf(http.StatusNotFound, "not_found", "no such route: %s %s", r.Method, r.URL.Path))
	}
}

// unmatchedWriter swallows the mux's plain-text 404 and 405 so that dispatch
// can answer in JSON; anything else (redirects) passes through.
type unmatchedWriter struct {
	http.ResponseWriter
	status int
}

func (w *unmatchedWriter) WriteHeader(code int) {
	if code == http.StatusNotFound || code == http.StatusMethodNotAllowed {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *unmatchedWriter) Write(b []byte) (int, error) {
	if w.status != 0 {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// writeJSON writes v as the JSON body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a write error means the client is gone
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}
