// Package web is enrichq's web page: sign in with an API key, follow the
// tenant's jobs, start one from a file, watch it, raise its budget, cancel
// it, download its results, and see the platform's connected members.
//
// Pages are rendered on the server (html/template, embedded with the
// binary); the only script polls a job's status. Every page is a call of
// internal/service with the principal of the signed-in session, so the page
// can do nothing an API key could not. The routes are registered by
// internal/httpapi (routes.go), each with the scope it needs.
package web

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/enrichq/enrichq/internal/service"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Keys finds who holds an API key, and whether a key still lives
// (httpapi.Keys).
type Keys interface {
	Principal(ctx context.Context, key string) (p service.Principal, ok bool, err error)
	// KeyLive reports whether tenant's key of id keyID is still known and
	// not revoked; a session ends with its key.
	KeyLive(ctx context.Context, tenant, keyID string) (bool, error)
}

// Config is what the page needs. Service and Keys are required.
type Config struct {
	Service *service.Service
	Keys    Keys
	// Session bounds a session; zero fields take DefaultSessionMax and
	// DefaultSessionIdle.
	Session service.SessionLifetime
	// BehindTLSProxy says browsers reach the page over HTTPS through a
	// proxy that ends TLS: the cookies are Secure and the answers carry
	// Strict-Transport-Security even on the proxy's plain HTTP. On a TLS
	// connection both hold anyway.
	BehindTLSProxy bool
	// Log receives what went wrong behind an "internal error" page;
	// default slog.Default().
	Log *slog.Logger
	// Now is the clock of relative times ("3 min ago"); default time.Now.
	Now func() time.Time
	// SignedIn, when set, is told the principal of each request with a
	// live session (the request log names its tenant).
	SignedIn func(ctx context.Context, p service.Principal)
}

// Defaults of Config.Session: a working day, and an hour away from the desk.
const (
	DefaultSessionMax  = 8 * time.Hour
	DefaultSessionIdle = time.Hour
)

// UI serves the pages. Its handlers are registered by internal/httpapi.
type UI struct {
	cfg   Config
	svc   *service.Service
	pages map[string]*template.Template
}

// New parses the templates and returns the page's handlers.
func New(cfg Config) *UI {
	if cfg.Service == nil || cfg.Keys == nil {
		panic("web: Config.Service and Config.Keys are required")
	}
	if cfg.Session.Max <= 0 {
		cfg.Session.Max = DefaultSessionMax
	}
	if cfg.Session.Idle <= 0 {
		cfg.Session.Idle = DefaultSessionIdle
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	u := &UI{cfg: cfg, svc: cfg.Service}
	u.pages = parsePages(u.funcs())
	return u
}

// parsePages parses each page with the layout: one template set a page.
func parsePages(funcs template.FuncMap) map[string]*template.Template {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		name := n[len("templates/") : len(n)-len(".html")]
		if name == "layout" {
			continue
		}
		pages[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n))
	}
	return pages
}

// page is what every page's template gets: the session (nil when signed
// out), the page's title and its own data.
type page struct {
	Title   string
	Session *service.WebSession
	Nav     string // the nav entry to mark current
	Data    any
}

// render writes the page name with status.
func (u *UI) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	t, ok := u.pages[name]
	if !ok {
		panic("web: no page " + name)
	}
	if p.Session == nil {
		p.Session = sessionFrom(r.Context())
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := t.Execute(w, p); err != nil {
		u.cfg.Log.ErrorContext(r.Context(), "web: rendering a page", "page", name, "err", err)
	}
}

// fail renders the page an error of the service deserves: not found,
// forbidden, or an internal error (logged, never shown).
func (u *UI) fail(w http.ResponseWriter, r *http.Request, err error) {
	var fe *service.ForbiddenError
	switch {
	case errors.Is(err, service.ErrNotFound):
		u.NotFound(w, r)
	case errors.As(err, &fe):
		u.render(w, r, http.StatusForbidden, "error", page{Title: "Not allowed",
			Data: "Your API key lacks the “" + string(fe.Need) + "” scope this needs. Sign in with a key that holds it."})
	case errors.As(err, new(*service.InvalidError)):
		pr, _ := problemOf(err)
		u.render(w, r, http.StatusBadRequest, "error", page{Title: "Not understood", Data: pr.Message})
	case errors.Is(err, service.ErrUnavailable):
		u.render(w, r, http.StatusServiceUnavailable, "error", page{Title: "Try again",
			Data: "The database is out of reach for a moment. Nothing was changed; try again in a few seconds."})
	default:
		u.cfg.Log.ErrorContext(r.Context(), "web: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		u.render(w, r, http.StatusInternalServerError, "error", page{Title: "Something went wrong",
			Data: "Something went wrong on our side. Nothing was lost; try again, and tell your administrator if it persists."})
	}
}

// NotFound is the page of a job (or anything) that is not the tenant's.
func (u *UI) NotFound(w http.ResponseWriter, r *http.Request) {
	u.render(w, r, http.StatusNotFound, "error", page{Title: "Not found",
		Data: "Not found: there is nothing at this address in your account."})
}

// Home sends a signed-in person to their jobs, anyone else to sign in.
func (u *UI) Home(w http.ResponseWriter, r *http.Request) {
	if _, ok, _ := u.session(r); ok {
		http.Redirect(w, r, "/ui/jobs", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/ui/signin", http.StatusSeeOther)
}

// Static serves the stylesheet and the script.
func (u *UI) Static(w http.ResponseWriter, r *http.Request) {
	sub, _ := fs.Sub(staticFS, "static")
	name := r.PathValue("file")
	if _, err := fs.Stat(sub, name); err != nil {
		u.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	http.ServeFileFS(w, r, sub, name)
}
