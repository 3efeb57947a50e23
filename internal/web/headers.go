package web

import "net/http"

// contentSecurityPolicy lets a page load only this server's stylesheet and
// script: no inline script or style, no frames, forms post here only.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// strictTransportSecurity keeps a browser that has seen the page over
// HTTPS on HTTPS for a year. Not includeSubDomains: the operator's other
// hosts are theirs to decide.
const strictTransportSecurity = "max-age=31536000"

// secure sets the headers of every answer of the page: the CSP, no
// framing, no sniffing, no referrer (a job id is in the URL), no caching
// of a tenant's data, and over TLS, HSTS.
func (u *UI) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if u.overTLS(r) {
			h.Set("Strict-Transport-Security", strictTransportSecurity)
		}
		next.ServeHTTP(w, r)
	})
}

// overTLS is true when the browser reached the page over HTTPS: a TLS
// connection, a proxy in front configured as ending TLS
// (Config.BehindTLSProxy), or one that says so (X-Forwarded-Proto). A
// client that lies about it only makes its own cookies stricter, and a
// browser ignores HSTS on plain HTTP.
func (u *UI) overTLS(r *http.Request) bool {
	return u.cfg.BehindTLSProxy || r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}
