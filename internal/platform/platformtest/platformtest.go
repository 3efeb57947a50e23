// Package platformtest is a faithful fake of the platform's first-party API
// (/work/shared/vendor-api.md, section 2) and of its OAuth 2.0 authorization
// server, as an http.Handler:
//
//   - GET /oauth/v2/authorization: the consent screen. It consents at once as
//     the member signed in to the fake ([Platform.SignIn]), or refuses
//     ([Platform.Deny]), and redirects to the redirect URI with a code and the
//     state. It requires state and a PKCE S256 challenge.
//   - POST /oauth/v2/accessToken: the token endpoint (authorization_code with
//     the PKCE verifier checked, refresh_token), client_id and client_secret
//     in the form or in Basic auth.
//   - GET /rest/me: the member's own profile. It checks the three headers
//     exactly as the contract says (Bearer token, Platform-Version YYYYMM,
//     X-Restli-Protocol-Version 2.0.0): a missing or malformed version or
//     protocol header is a 400 whose message names no cause; a retired
//     version is a 426; an unknown, revoked or expired token a 401; a token
//     without the profile scope a 403; an application-level or member-level
//     daily quota a 429 that does not say which. Quotas reset at midnight UTC
//     on the injectable clock.
//
// The fake speaks the wire on its own (it does not reuse the client's code),
// so a client bug is not hidden by the same bug in the fake. Tests drive it
// through its methods; the dev/fakeplatform command adds a few control endpoints
// under /_fake/.
package platformtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Paths of the fake.
const (
	PathAuthorize = "/oauth/v2/authorization"
	PathToken     = "/oauth/v2/accessToken"
	PathMe        = "/rest/me"
)

// Options configure a [Platform]. Zero values take the defaults.
type Options struct {
	// ClientID and ClientSecret of the one registered app. Default
	// "test-client" and "test-secret".
	ClientID, ClientSecret string
	// RedirectURLs the app registered; a request with another redirect URI is
	// refused. Empty: any.
	RedirectURLs []string
	// RetiredVersions are Platform-Version values answered 426.
	RetiredVersions []string
	// AccessTokenTTL is the life of an access token. Default 60 days.
	AccessTokenTTL time.Duration
	// RefreshTokenTTL is the life of a refresh token; 0 issues none (the
	// platform gives refresh tokens only to some apps).
	RefreshTokenTTL time.Duration
	// CodeTTL is the life of an authorization code. Default 10 minutes.
	CodeTTL time.Duration
	// AppDailyQuota and MemberDailyQuota cap the /rest/me calls answered per
	// UTC day, for the whole app and for each member; 0 means no cap.
	AppDailyQuota, MemberDailyQuota int
	// Now is the fake's clock (token expiry, quota days). Default time.Now.
	Now func() time.Time
}

// DefaultOptions are the defaults, spelled out.
func DefaultOptions() Options {
	return Options{ClientID: "test-client", ClientSecret: "test-secret", AccessTokenTTL: 60 * 24 * time.Hour, CodeTTL: 10 * time.Minute}
}

// Member is a member of the platform, as /rest/me shows them.
type Member struct {
	ID         string
	FirstName  string
	LastName   string
	Headline   string
	VanityName string
	Email      string
}

// Platform is the fake. It is safe for concurrent use.
type Platform struct {
	opts Options
	mux  *http.ServeMux

	mu       sync.Mutex
	members  map[string]Member
	signedIn string
	deny     bool
	grantNot []string // scopes the member unticks on the consent screen
	codes    map[string]*codeGrant
	access   map[string]*accessToken
	refresh  map[string]*refreshToken
	retired  map[string]bool
	appQuota int
	memQuota int
	day      string
	appCalls int
	memCalls map[string]int
	faults   []int // statuses to answer the next /rest/me calls with
	requests map[string]int
	profiles int
}

type codeGrant struct {
	member, redirect, challenge string
	scopes                      []string
	expires                     time.Time
	used                        bool
}

type accessToken struct {
	member  string
	scopes  []string
	expires time.Time
	revoked bool
}

type refreshToken struct {
	member  string
	scopes  []string
	expires time.Time
	revoked bool
}

// New returns a fake platform.
func New(opts Options) *Platform {
	def := DefaultOptions()
	if opts.ClientID == "" {
		opts.ClientID = def.ClientID
	}
	if opts.ClientSecret == "" {
		opts.ClientSecret = def.ClientSecret
	}
	if opts.AccessTokenTTL <= 0 {
		opts.AccessTokenTTL = def.AccessTokenTTL
	}
	if opts.CodeTTL <= 0 {
		opts.CodeTTL = def.CodeTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	p := &Platform{
		opts: opts, mux: http.NewServeMux(),
		members: map[string]Member{}, codes: map[string]*codeGrant{}, access: map[string]*accessToken{},
		refresh: map[string]*refreshToken{}, retired: map[string]bool{}, memCalls: map[string]int{}, requests: map[string]int{},
		appQuota: opts.AppDailyQuota, memQuota: opts.MemberDailyQuota,
	}
	for _, v := range opts.RetiredVersions {
		p.retired[v] = true
	}
	p.mux.HandleFunc("GET "+PathAuthorize, p.authorize)
	p.mux.HandleFunc("POST "+PathToken, p.token)
	p.mux.HandleFunc("GET "+PathMe, p.me)
	return p
}

// ServeHTTP serves the platform's API and its authorization server.
func (p *Platform) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.requests[r.URL.Path]++
	p.mu.Unlock()
	p.mux.ServeHTTP(w, r)
}

// rollDay resets the daily quotas when the UTC day of the clock changed.
func (p *Platform) rollDay() {
	day := p.opts.Now().UTC().Format(time.DateOnly)
	if day != p.day {
		p.day, p.appCalls = day, 0
		clear(p.memCalls)
	}
}

func apiError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"status": status, "serviceErrorCode": 100, "message": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}
