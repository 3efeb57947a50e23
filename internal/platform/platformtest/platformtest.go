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
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
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

// ---- control, for tests ----

// AddMember registers a member (and returns it).
func (p *Platform) AddMember(m Member) Member {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.members[m.ID] = m
	return m
}

// SignIn makes the member with this id the one who consents on the next visits
// of the consent screen.
func (p *Platform) SignIn(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.signedIn = id
}

// Deny makes the consent screen refuse (error=access_denied) while on.
func (p *Platform) Deny(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deny = on
}

// WithholdScopes makes the member untick these scopes on the consent screen.
func (p *Platform) WithholdScopes(scopes ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.grantNot = scopes
}

// Revoke revokes every token (access and refresh) of a member.
func (p *Platform) Revoke(memberID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.access {
		if t.member == memberID {
			t.revoked = true
		}
	}
	for _, t := range p.refresh {
		if t.member == memberID {
			t.revoked = true
		}
	}
}

// DropScope takes a scope away from every token of a member (the member
// removed a permission in their settings).
func (p *Platform) DropScope(memberID, scope string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.access {
		if t.member == memberID {
			t.scopes = slices.DeleteFunc(slices.Clone(t.scopes), func(s string) bool { return s == scope })
		}
	}
}

// SetTokenTTL changes the life of the tokens issued from now on; refresh 0
// issues no refresh token.
func (p *Platform) SetTokenTTL(access, refresh time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.opts.AccessTokenTTL, p.opts.RefreshTokenTTL = access, refresh
}

// ExpireAccess ends every access token of a member now, earlier than its
// stated life, leaving refresh tokens alone (the platform may end a token
// sooner than expires_in said).
func (p *Platform) ExpireAccess(memberID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.access {
		if t.member == memberID {
			t.revoked = true
		}
	}
}

// Retire adds versions to the retired list.
func (p *Platform) Retire(versions ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, v := range versions {
		p.retired[v] = true
	}
}

// SetQuotas changes the daily quotas (0: no cap).
func (p *Platform) SetQuotas(app, member int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.appQuota, p.memQuota = app, member
}

// FailNext answers the next /rest/me calls (past the header checks) with
// these statuses, one each, e.g. 503.
func (p *Platform) FailNext(statuses ...int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, statuses...)
}

// Requests is the number of requests received on path ("" for every path).
func (p *Platform) Requests(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if path != "" {
		return p.requests[path]
	}
	n := 0
	for _, c := range p.requests {
		n += c
	}
	return n
}

// ProfilesServed is the number of /rest/me calls answered 200.
func (p *Platform) ProfilesServed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.profiles
}

// Stats is what the fake did, for the control endpoint.
type Stats struct {
	Requests       map[string]int `json:"requests"`
	ProfilesServed int            `json:"profiles_served"`
	QuotaDay       string         `json:"quota_day"`
	AppCalls       int            `json:"app_calls_today"`
	Members        int            `json:"members"`
	AccessTokens   int            `json:"access_tokens"`
}

// Stats returns a snapshot.
func (p *Platform) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rollDay()
	req := make(map[string]int, len(p.requests))
	for k, v := range p.requests {
		req[k] = v
	}
	return Stats{Requests: req, ProfilesServed: p.profiles, QuotaDay: p.day, AppCalls: p.appCalls, Members: len(p.members), AccessTokens: len(p.access)}
}

// IssueToken mints an access token (and a refresh token when refreshTTL > 0)
// for a member without the consent screen, with the given scopes and life.
func (p *Platform) IssueToken(memberID string, scopes []string, ttl, refreshTTL time.Duration) (access, refresh string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Now()
	access = "AQ" + random(24)
	p.access[access] = &accessToken{member: memberID, scopes: scopes, expires: now.Add(ttl)}
	if refreshTTL > 0 {
		refresh = "AR" + random(24)
		p.refresh[refresh] = &refreshToken{member: memberID, scopes: scopes, expires: now.Add(refreshTTL)}
	}
	return access, refresh
}

// ---- the consent screen ----

func (p *Platform) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	defer p.mu.Unlock()
	redirect := q.Get("redirect_uri")
	if q.Get("client_id") != p.opts.ClientID {
		pageError(w, http.StatusBadRequest, "unknown client_id")
		return
	}
	ru, err := url.Parse(redirect)
	if redirect == "" || err != nil || !ru.IsAbs() || (len(p.opts.RedirectURLs) > 0 && !slices.Contains(p.opts.RedirectURLs, redirect)) {
		pageError(w, http.StatusBadRequest, "redirect_uri is not one the app registered")
		return
	}
	back := func(v url.Values) {
		v.Set("state", q.Get("state"))
		u := *ru
		qs := u.Query()
		for k, vs := range v {
			qs[k] = vs
		}
		u.RawQuery = qs.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
	switch {
	case q.Get("response_type") != "code":
		back(url.Values{"error": {"unsupported_response_type"}})
		return
	case q.Get("state") == "":
		back(url.Values{"error": {"invalid_request"}, "error_description": {"state is required"}})
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		back(url.Values{"error": {"invalid_request"}, "error_description": {"PKCE with code_challenge_method S256 is required"}})
		return
	}
	scopes := strings.Fields(q.Get("scope"))
	if !slices.Contains(scopes, "openid") {
		back(url.Values{"error": {"invalid_scope"}, "error_description": {"openid is required"}})
		return
	}
	if p.deny {
		back(url.Values{"error": {"access_denied"}, "error_description": {"the member declined"}})
		return
	}
	if _, ok := p.members[p.signedIn]; !ok {
		pageError(w, http.StatusUnauthorized, "no member is signed in to the fake platform (SignIn)")
		return
	}
	var granted []string
	for _, s := range scopes {
		if !slices.Contains(p.grantNot, s) {
			granted = append(granted, s)
		}
	}
	code := "AC" + random(24)
	p.codes[code] = &codeGrant{member: p.signedIn, redirect: redirect, challenge: q.Get("code_challenge"), scopes: granted,
		expires: p.opts.Now().Add(p.opts.CodeTTL)}
	back(url.Values{"code": {code}})
}

func pageError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>Sign in</title><p>%s</p>\n", msg)
}

// ---- the token endpoint ----

func (p *Platform) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, http.StatusBadRequest, "invalid_request", "the body is not a form")
		return
	}
	id, secret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	if u, pw, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(u)
		secret, _ = url.QueryUnescape(pw)
	}
	if id != p.opts.ClientID || subtle.ConstantTimeCompare([]byte(secret), []byte(p.opts.ClientSecret)) != 1 {
		tokenError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Now()
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		g, ok := p.codes[r.PostForm.Get("code")]
		switch {
		case !ok:
			tokenError(w, http.StatusBadRequest, "invalid_grant", "unknown authorization code")
			return
		case g.used:
			tokenError(w, http.StatusBadRequest, "invalid_grant", "the authorization code was already used")
			return
		case !now.Before(g.expires):
			tokenError(w, http.StatusBadRequest, "invalid_grant", "the authorization code expired")
			return
		case r.PostForm.Get("redirect_uri") != g.redirect:
			tokenError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri does not match the authorization request")
			return
		}
		verifier := r.PostForm.Get("code_verifier")
		sum := sha256.Sum256([]byte(verifier))
		if verifier == "" || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			tokenError(w, http.StatusBadRequest, "invalid_grant", "PKCE verification failed: code_verifier does not match code_challenge")
			return
		}
		g.used = true
		p.issue(w, g.member, g.scopes, "", now)
	case "refresh_token":
		rt, ok := p.refresh[r.PostForm.Get("refresh_token")]
		if !ok || rt.revoked || !now.Before(rt.expires) {
			tokenError(w, http.StatusBadRequest, "invalid_grant", "the refresh token is invalid, expired or revoked")
			return
		}
		p.issue(w, rt.member, rt.scopes, r.PostForm.Get("refresh_token"), now)
	default:
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
}

// issue answers a token response; keepRefresh is the refresh token of a
// refresh grant (kept, with its remaining life), else a new one is minted.
func (p *Platform) issue(w http.ResponseWriter, member string, scopes []string, keepRefresh string, now time.Time) {
	access := "AQ" + random(24)
	p.access[access] = &accessToken{member: member, scopes: scopes, expires: now.Add(p.opts.AccessTokenTTL)}
	body := map[string]any{
		"access_token": access,
		"token_type":   "Bearer",
		"expires_in":   int64(p.opts.AccessTokenTTL / time.Second),
		"scope":        strings.Join(scopes, " "),
	}
	switch {
	case keepRefresh != "":
		body["refresh_token"] = keepRefresh
		body["refresh_token_expires_in"] = int64(p.refresh[keepRefresh].expires.Sub(now) / time.Second)
	case p.opts.RefreshTokenTTL > 0:
		rt := "AR" + random(24)
		p.refresh[rt] = &refreshToken{member: member, scopes: scopes, expires: now.Add(p.opts.RefreshTokenTTL)}
		body["refresh_token"] = rt
		body["refresh_token_expires_in"] = int64(p.opts.RefreshTokenTTL / time.Second)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, body)
}

func tokenError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// ---- /rest/me ----

// versionOK is the shape of Platform-Version: six digits YYYYMM.
func versionOK(v string) bool {
	if len(v) != 6 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	m := (v[4]-'0')*10 + (v[5] - '0')
	return m >= 1 && m <= 12
}

func (p *Platform) me(w http.ResponseWriter, r *http.Request) {
	// The three headers, exactly. A missing or malformed one is a 400 whose
	// message names no cause (given).
	auth := r.Header.Values("Authorization")
	version := r.Header.Values("Platform-Version")
	restli := r.Header.Values("X-Restli-Protocol-Version")
	if len(version) != 1 || !versionOK(version[0]) || len(restli) != 1 || restli[0] != "2.0.0" {
		apiError(w, http.StatusBadRequest, "Invalid request")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.retired[version[0]] {
		apiError(w, http.StatusUpgradeRequired, "Requested version "+version[0]+" is not active")
		return
	}
	if len(auth) != 1 || !strings.HasPrefix(auth[0], "Bearer ") {
		apiError(w, http.StatusUnauthorized, "Empty oauth2 access token")
		return
	}
	now := p.opts.Now()
	t, ok := p.access[strings.TrimPrefix(auth[0], "Bearer ")]
	switch {
	case !ok:
		apiError(w, http.StatusUnauthorized, "Invalid access token")
		return
	case t.revoked:
		apiError(w, http.StatusUnauthorized, "The token used in the request has been revoked by the user")
		return
	case !now.Before(t.expires):
		apiError(w, http.StatusUnauthorized, "The token used in the request has expired")
		return
	case !slices.Contains(t.scopes, "profile"):
		apiError(w, http.StatusForbidden, "Not enough permissions to access: me.GET.NO_VERSION")
		return
	}
	if len(p.faults) > 0 {
		status := p.faults[0]
		p.faults = p.faults[1:]
		apiError(w, status, "Internal Server Error")
		return
	}
	p.rollDay()
	if (p.appQuota > 0 && p.appCalls >= p.appQuota) || (p.memQuota > 0 && p.memCalls[t.member] >= p.memQuota) {
		// Which quota was hit is not said (given).
		apiError(w, http.StatusTooManyRequests, "Resource level throttle limit for calls to this resource is reached.")
		return
	}
	p.appCalls++
	p.memCalls[t.member]++
	m := p.members[t.member]
	p.profiles++
	body := map[string]any{
		"id":                 m.ID,
		"sub":                m.ID,
		"localizedFirstName": m.FirstName,
		"localizedLastName":  m.LastName,
		"localizedHeadline":  m.Headline,
		"vanityName":         m.VanityName,
		"profilePicture":     map[string]string{"displayImage": "urn:li:digitalmediaAsset:" + hash(m.ID)},
		"name":               strings.TrimSpace(m.FirstName + " " + m.LastName),
		"given_name":         m.FirstName,
		"family_name":        m.LastName,
		"locale":             map[string]string{"country": "US", "language": "en"},
		"x_fake_served_at":   now.UTC().Format(time.RFC3339),
	}
	if slices.Contains(t.scopes, "email") && m.Email != "" {
		body["email"] = m.Email
		body["email_verified"] = true
	}
	writeJSON(w, http.StatusOK, body)
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

// Clock is a settable clock for Options.Now and for the code under test, so
// that the fake's quota days and token lives and enrichq's due times move
// together. It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock showing t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now tells the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
