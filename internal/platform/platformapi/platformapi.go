// Package platformapi is the client of the platform's own first-party API
// (/work/shared/vendor-api.md, section 2) and holds every assumption about
// its wire: the path and headers of /rest/me, the names of the profile's
// fields, what each status means (classify), the OAuth scopes and the token
// response's extra fields. Adapting to the real platform's exact shapes is a
// change of this package only.
//
// The platform reads only the profile of a member who signed in and
// consented, with that member's own access token. It has no lookup by
// profile URL at any tier: a request to look one up through the platform is
// refused here, before any call ([ColdLookupError]); cold lookups go to the
// vendor.
package platformapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/oauth2"

	"github.com/enrichq/enrichq/internal/upstream"
)

// The platform's wire (given unless marked assumed).
const (
	pathMe                = "/rest/me"                  // GET, the signed-in member's own profile
	headerPlatformVersion = "Platform-Version"          // YYYYMM
	headerRestliProtocol  = "X-Restli-Protocol-Version" // constant
	// RestliProtocol is the value of X-Restli-Protocol-Version.
	RestliProtocol = "2.0.0"
)

// Scopes are the scopes the connect flow asks for: OpenID Connect
// sign-in with the member's profile and email (the "Sign In" product).
var Scopes = []string{"openid", "profile", "email"}

// ValidateVersion checks a Platform-Version: six digits YYYYMM with a
// month from 01 to 12. enrichq checks it at start-up, before any call.
func ValidateVersion(v string) error {
	if len(v) != 6 || strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return fmt.Errorf("platform version %q: want six digits YYYYMM, e.g. 202611", upstream.Clip(v, 20))
	}
	year, _ := strconv.Atoi(v[:4])
	month, _ := strconv.Atoi(v[4:])
	if month < 1 || month > 12 || year < 2000 {
		return fmt.Errorf("platform version %q: want YYYYMM with a month from 01 to 12", v)
	}
	return nil
}

// Config configures a [Client]. BaseURL and Version are required.
type Config struct {
	// BaseURL is the platform's base URL ({platform_url}); /rest/me is under it.
	BaseURL string
	// Version is sent as Platform-Version on every call (YYYYMM).
	Version string
	// HTTPClient makes the calls. Default: a client with a 30s timeout.
	// Whatever its CheckRedirect, the client follows no redirect
	// ([upstream.NoRedirects]).
	HTTPClient *http.Client
	// UserAgent is sent as User-Agent. Default "enrichq".
	UserAgent string
	// MaxResponseBytes bounds how much of an answer is read. Default 1 MiB.
	MaxResponseBytes int64
}

// Client calls the platform's /rest/me with a member's own token. It
// is safe for concurrent use; each call makes exactly one HTTP request and
// never retries.
type Client struct {
	base    string
	version string
	call    upstream.Caller
}

// NewClient validates cfg (the version above all) and returns a client.
func NewClient(cfg Config) (*Client, error) {
	if err := ValidateVersion(cfg.Version); err != nil {
		return nil, fmt.Errorf("platformapi: %w", err)
	}
	base, err := parseBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{base: base, version: cfg.Version,
		call: upstream.Caller{HTTP: cfg.HTTPClient, UserAgent: cfg.UserAgent, MaxBody: cfg.MaxResponseBytes}}
	if c.call.HTTP == nil {
		c.call.HTTP = &http.Client{Timeout: upstream.DefaultTimeout}
	}
	c.call.HTTP = upstream.NoRedirects(c.call.HTTP)
	if c.call.UserAgent == "" {
		c.call.UserAgent = upstream.DefaultUserAgent
	}
	if c.call.MaxBody <= 0 {
		c.call.MaxBody = 1 << 20
	}
	return c, nil
}

func parseBaseURL(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("platformapi: platform URL %q is not an http(s) URL", upstream.Clip(s, 200))
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("platformapi: platform URL %q must not carry credentials, a query or a fragment", u.Redacted())
	}
	return u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), nil
}

// Version is the Platform-Version the client sends.
func (c *Client) Version() string { return c.version }

// String names the client.
func (c *Client) String() string {
	return "platformapi.Client{" + c.base + ", version " + c.version + "}"
}

// Profile is the signed-in member's own profile: the fields present in
// the answer (assumed names), and the answer itself.
type Profile struct {
	// ID is the member's id on the platform: "id", else the OpenID "sub".
	ID         string
	FirstName  string // localizedFirstName, else given_name
	LastName   string // localizedLastName, else family_name
	Name       string // name, else first and last name
	Headline   string // localizedHeadline
	VanityName string // vanityName
	Email      string // email
	Picture    string // picture, or profilePicture when it is a string
	// Raw is the answer exactly as received, unknown fields included.
	Raw json.RawMessage
}

// Me reads the profile of the member whose access token this is:
// GET {platform_url}/rest/me with the three headers.
func (c *Client) Me(ctx context.Context, accessToken string) (*Profile, error) {
	tok := strings.TrimSpace(accessToken)
	if tok == "" || strings.IndexFunc(tok, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return nil, &Error{Class: ClassTokenInvalid, Message: "member token is empty or malformed; the member must reconnect"}
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+tok)
	h.Set(headerPlatformVersion, c.version)
	h.Set(headerRestliProtocol, RestliProtocol)
	h.Set("Accept", "application/json")
	call := c.call // the member's token is this call's secret
	call.Secret = tok
	resp, err := call.Do(ctx, upstream.Request{Method: http.MethodGet, URL: c.base + pathMe, Header: h})
	if resp == nil {
		return nil, callError(err)
	}
	if e := classify(resp.Status, resp.Body, c.version); e != nil {
		e.Detail = upstream.Redact(e.Detail, tok)
		return nil, e
	}
	if err != nil { // a 2xx cut short or too long
		return nil, callError(err)
	}
	p, err := decodeProfile(resp.Body)
	if err != nil {
		return nil, &Error{Class: ClassTransient, Status: resp.Status, Message: "malformed answer: " + upstream.ErrText(err), Err: err}
	}
	return p, nil
}

// callError is the *Error of a call the upstream kit could not complete
// (its text already without the token): a request that could not be
// built is rejected; no complete answer, or one too long, is transient.
func callError(err error) *Error {
	var ue *upstream.Error
	if !errors.As(err, &ue) {
		ue = &upstream.Error{Code: upstream.TransportCode(err), Message: upstream.ErrText(err), Err: err}
	}
	e := &Error{Class: ClassTransient, Status: ue.Status, Message: ue.Message, Err: ue.Err}
	switch ue.Code {
	case upstream.CodeInvalidRequest:
		e.Class = ClassRejected
	case "canceled":
		e.Message = "canceled"
	case "timeout":
		e.Message = "timeout: " + e.Message
	}
	return e
}

// decodeProfile extracts the fields present; a value of another type
// than expected is left in Raw only. An answer without "id" or "sub" is
// malformed: the member cannot be told apart from another.
func decodeProfile(data []byte) (*Profile, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	str := func(keys ...string) string {
		for _, k := range keys {
			var s string
			if raw, ok := m[k]; ok && json.Unmarshal(raw, &s) == nil && strings.TrimSpace(s) != "" {
				return strings.TrimSpace(s)
			}
		}
		return ""
	}
	p := &Profile{
		ID:         str("id", "sub"),
		FirstName:  str("localizedFirstName", "given_name"),
		LastName:   str("localizedLastName", "family_name"),
		Name:       str("name"),
		Headline:   str("localizedHeadline"),
		VanityName: str("vanityName"),
		Email:      str("email"),
		Picture:    str("picture", "profilePicture"),
		Raw:        json.RawMessage(append([]byte(nil), data...)),
	}
	if p.ID == "" {
		return nil, errors.New(`the profile has neither "id" nor "sub"`)
	}
	if p.Name == "" {
		p.Name = strings.TrimSpace(p.FirstName + " " + p.LastName)
	}
	return p, nil
}

// Class says what to do with a failed platform call.
type Class int

// The classes of failed platform calls, decided in classify.
const (
	// ClassTransient: 5xx, timeouts, resets, malformed answers. Retry with
	// backoff, a bounded number of times.
	ClassTransient Class = iota
	// ClassQuota: 429, an application-level or member-level daily quota
	// (the answer does not say which). Both reset at midnight UTC: retry
	// after the next one ([NextQuotaReset]), never sooner.
	ClassQuota
	// ClassTokenInvalid: 401, the member's token expired or was revoked.
	// The member must reconnect; other members are unaffected.
	ClassTokenInvalid
	// ClassScope: 403, a scope is not held (or another member's data was asked for).
	ClassScope
	// ClassVersionMissing: 400 without a named cause, which the contract
	// says is the platform's answer to a missing Platform-Version. Every call
	// would fail the same way: stop.
	ClassVersionMissing
	// ClassVersionRetired: 426, the Platform-Version is retired. Every
	// call would fail the same way: stop, never retry.
	ClassVersionRetired
	// ClassRejected: another 4xx. Permanent for that call.
	ClassRejected
	// ClassColdLookup: a lookup of a third party's profile (a profile
	// URL), refused by enrichq before any call.
	ClassColdLookup
)

// String is the class's name, as used in logs.
func (c Class) String() string {
	switch c {
	case ClassTransient:
		return "transient"
	case ClassQuota:
		return "daily_quota"
	case ClassTokenInvalid:
		return "token_invalid"
	case ClassScope:
		return "scope_not_held"
	case ClassVersionMissing:
		return "version_missing"
	case ClassVersionRetired:
		return "version_retired"
	case ClassRejected:
		return "rejected"
	case ClassColdLookup:
		return "cold_lookup"
	}
	return fmt.Sprintf("platform_class(%d)", int(c))
}

// Error is a failed platform call, or a request refused before one.
// Its text never holds a token.
type Error struct {
	Class  Class
	Status int // HTTP status; 0 when there was none
	// Message is what a user should read (also a job's or a row's reason).
	Message string
	// Detail is what the platform itself said, clipped; for logs.
	Detail string
	Err    error
}

// Error is "platform: <message> (status N)".
func (e *Error) Error() string {
	s := "platform: " + e.Message
	if e.Status != 0 {
		s += fmt.Sprintf(" (status %d)", e.Status)
	}
	return s
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrColdLookup) true for a refused cold lookup.
func (e *Error) Is(target error) bool {
	return target == ErrColdLookup && e.Class == ClassColdLookup
}

// StopsApp reports whether no call of this application can succeed until
// someone changes its configuration (400 missing version, 426 retired
// version): a job should pause with this error's Message as its reason.
func (e *Error) StopsApp() bool {
	return e.Class == ClassVersionMissing || e.Class == ClassVersionRetired
}

// AsError finds a [*Error] in err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// classify is the one place that decides what a platform answer
// means: nil for a 2xx, else the error with its class and message.
func classify(status int, body []byte, version string) *Error {
	if status >= 200 && status <= 299 {
		return nil
	}
	e := &Error{Status: status, Detail: errorDetail(body)}
	switch {
	case status == http.StatusBadRequest:
		// The platform's message for a missing version names no cause (given).
		e.Class, e.Message = ClassVersionMissing, "request rejected; check that Platform-Version is set"
	case status == http.StatusUpgradeRequired:
		e.Class, e.Message = ClassVersionRetired, fmt.Sprintf("platform version %s is retired; set a newer one", version)
	case status == http.StatusUnauthorized:
		e.Class, e.Message = ClassTokenInvalid, "member token expired or was revoked; the member must reconnect"
	case status == http.StatusForbidden:
		e.Class, e.Message = ClassScope, "scope not held: the member's token lacks a scope /rest/me needs (openid profile email), or the app lacks the Sign In product"
	case status == http.StatusTooManyRequests:
		e.Class, e.Message = ClassQuota, "daily quota reached (the application's or the member's); both reset at midnight UTC"
	case status >= 500 || status == http.StatusRequestTimeout:
		e.Class, e.Message = ClassTransient, fmt.Sprintf("platform error %d", status)
	default:
		e.Class, e.Message = ClassRejected, fmt.Sprintf("request refused with status %d", status)
		if e.Detail != "" {
			e.Message += ": " + e.Detail
		}
	}
	return e
}

// errorDetail is the message of an error answer (assumed shape
// {"message": "...", "status": N}), else the start of the body.
func errorDetail(body []byte) string {
	var b struct {
		Message          string `json:"message"`
		ErrorDescription string `json:"error_description"`
	}
	if json.Unmarshal(body, &b) == nil {
		if b.Message != "" {
			return upstream.Clip(b.Message, 300)
		}
		if b.ErrorDescription != "" {
			return upstream.Clip(b.ErrorDescription, 300)
		}
	}
	return upstream.Clip(strings.TrimSpace(string(body)), 300)
}

// NextQuotaReset is when the platform's daily quotas next reset: the first
// midnight UTC strictly after now.
func NextQuotaReset(now time.Time) time.Time {
	u := now.UTC()
	return time.Date(u.Year(), u.Month(), u.Day()+1, 0, 0, 0, 0, time.UTC)
}

// ErrColdLookup matches (errors.Is) a lookup of a third party's profile
// refused before any call to the platform.
var ErrColdLookup = errors.New("cold lookup through the platform refused")

// ColdLookupError is the refusal of a request to look up input (a profile
// URL, or anything else not a connected member) through the platform. No
// call is made.
func ColdLookupError(input string) *Error {
	return &Error{Class: ClassColdLookup, Status: 0, Message: fmt.Sprintf(
		"%q is not a connected member: the platform's API reads only the profile of a member who signed in and consented, "+
			"and has no lookup by profile URL (asking it for another person is an authorisation error). "+
			"Cold lookups go to the vendor: submit the profile URL in a job, POST /v1/jobs", upstream.Clip(input, 200))}
}

// LooksLikeProfileURL reports whether s names a profile by URL or by a
// path such as "/in/jane-doe" rather than being a member id.
func LooksLikeProfileURL(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.Contains(s, "://") || strings.HasPrefix(s, "www.") || strings.Contains(s, "/in/") ||
		strings.HasPrefix(s, "in/") || strings.Contains(s, ".com/") || strings.Contains(s, ".example/")
}

// OAuthConfig is what the connect flow needs; the endpoints are not
// given by the contract, so they come from configuration.
type OAuthConfig struct {
	AuthURL      string // the consent screen (authorization endpoint)
	TokenURL     string // the token endpoint
	ClientID     string
	ClientSecret string
	RedirectURL  string // enrichq's callback, as registered at the platform
}

// NewOAuth builds the OAuth 2.0 configuration of the connect flow
// (authorization code with PKCE, scopes [Scopes]). The client
// authenticates at the token endpoint with client_id and client_secret in
// the form body (assumed, as the platform documents for its own apps).
func NewOAuth(c OAuthConfig) (*oauth2.Config, error) {
	var missing []string
	for name, v := range map[string]string{"auth URL": c.AuthURL, "token URL": c.TokenURL, "client id": c.ClientID,
		"client secret": c.ClientSecret, "redirect URL": c.RedirectURL} {
		if strings.TrimSpace(v) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("platformapi: platform OAuth: missing %s", strings.Join(missing, ", "))
	}
	for name, v := range map[string]string{"auth URL": c.AuthURL, "token URL": c.TokenURL, "redirect URL": c.RedirectURL} {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("platformapi: platform OAuth: %s %q is not an http(s) URL", name, upstream.Clip(v, 200))
		}
	}
	return &oauth2.Config{
		ClientID:     c.ClientID,
		ClientSecret: c.ClientSecret,
		Endpoint:     oauth2.Endpoint{AuthURL: c.AuthURL, TokenURL: c.TokenURL, AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL:  c.RedirectURL,
		Scopes:       append([]string(nil), Scopes...),
	}, nil
}

// TokenLife is what a token answer says of the token's life.
type TokenLife struct {
	// Expiry of the access token; zero when the platform gave none.
	Expiry time.Time
	// RefreshExpiry of the refresh token, from refresh_token_expires_in
	// (assumed name); zero when absent or when there is no refresh token.
	RefreshExpiry time.Time
	// Scopes granted ("scope", space- or comma-separated); nil when absent
	// (then the requested scopes were granted, RFC 6749 5.1).
	Scopes []string
}

// TokenLifeOf reads a token answer received at now (the caller's
// clock, so that tests can run on fake time).
func TokenLifeOf(tok *oauth2.Token, now time.Time) TokenLife {
	var l TokenLife
	switch {
	case tok.ExpiresIn > 0:
		l.Expiry = now.Add(time.Duration(tok.ExpiresIn) * time.Second)
	case !tok.Expiry.IsZero():
		l.Expiry = tok.Expiry
	}
	if tok.RefreshToken != "" {
		if secs := extraInt(tok.Extra("refresh_token_expires_in")); secs > 0 {
			l.RefreshExpiry = now.Add(time.Duration(secs) * time.Second)
		}
	}
	if s, ok := tok.Extra("scope").(string); ok && strings.TrimSpace(s) != "" {
		l.Scopes = strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
	}
	return l
}

func extraInt(v any) int64 {
	switch x := v.(type) {
	case float64:
		return int64(x)
	case int64:
		return x
	case json.Number:
		n, _ := x.Int64()
		return n
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}
