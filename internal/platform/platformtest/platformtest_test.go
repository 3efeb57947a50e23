package platformtest_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/platform/platformtest"
)

var day = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

type fixture struct {
	fp    *platformtest.Platform
	srv   *httptest.Server
	clock *platformtest.Clock
}

func setup(t *testing.T, opts platformtest.Options) *fixture {
	t.Helper()
	clock := platformtest.NewClock(day)
	opts.Now = clock.Now
	fp := platformtest.New(opts)
	srv := httptest.NewServer(fp)
	t.Cleanup(srv.Close)
	fp.AddMember(platformtest.Member{ID: "m-ann", FirstName: "Ann", LastName: "Lee", Headline: "VP Sales", Email: "ann@example.com"})
	fp.AddMember(platformtest.Member{ID: "m-bob", FirstName: "Bob", LastName: "Roe"})
	return &fixture{fp: fp, srv: srv, clock: clock}
}

// me calls /rest/me with the given headers (nil value: header absent).
func (f *fixture) me(t *testing.T, headers map[string]string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+platformtest.PathMe, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func headers(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token, "Platform-Version": "202611", "X-Restli-Protocol-Version": "2.0.0"}
}

func without(h map[string]string, key string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func with(h map[string]string, key, value string) map[string]string {
	out := without(h, key)
	out[key] = value
	return out
}

func TestMeChecksTheThreeHeaders(t *testing.T) {
	t.Parallel()
	f := setup(t, platformtest.Options{RetiredVersions: []string{"202401"}})
	tok, _ := f.fp.IssueToken("m-ann", []string{"openid", "profile", "email"}, time.Hour, 0)
	h := headers(tok)

	status, body := f.me(t, h)
	if status != http.StatusOK || body["id"] != "m-ann" || body["localizedFirstName"] != "Ann" || body["email"] != "ann@example.com" {
		t.Fatalf("all three headers: %d %v", status, body)
	}
	for name, tc := range map[string]struct {
		h      map[string]string
		status int
	}{
		"no version":         {without(h, "Platform-Version"), 400},
		"version not YYYYMM": {with(h, "Platform-Version", "2026-11"), 400},
		"version month 13":   {with(h, "Platform-Version", "202613"), 400},
		"no restli header":   {without(h, "X-Restli-Protocol-Version"), 400},
		"restli 1.0.0":       {with(h, "X-Restli-Protocol-Version", "1.0.0"), 400},
		"retired version":    {with(h, "Platform-Version", "202401"), 426},
		"no token":           {without(h, "Authorization"), 401},
		"not a bearer token": {with(h, "Authorization", "Token "+tok), 401},
		"unknown token":      {with(h, "Authorization", "Bearer nope"), 401},
		"the three headers":  {h, 200},
	} {
		status, body := f.me(t, tc.h)
		if status != tc.status {
			t.Errorf("%s: status %d, want %d (%v)", name, status, tc.status, body)
		}
		if status == 400 {
			// The contract: the message names no cause.
			if msg, _ := body["message"].(string); strings.Contains(strings.ToLower(msg), "version") || strings.Contains(strings.ToLower(msg), "header") {
				t.Errorf("%s: the 400's message %q names its cause; the real platform's does not", name, msg)
			}
		}
	}
}

func TestMeTokens(t *testing.T) {
	t.Parallel()
	f := setup(t, platformtest.Options{})
	noProfile, _ := f.fp.IssueToken("m-ann", []string{"openid", "email"}, time.Hour, 0)
	if status, _ := f.me(t, headers(noProfile)); status != http.StatusForbidden {
		t.Errorf("token without the profile scope: %d, want 403", status)
	}
	short, _ := f.fp.IssueToken("m-ann", []string{"openid", "profile"}, time.Minute, 0)
	if status, body := f.me(t, headers(short)); status != http.StatusOK || body["email"] != nil {
		t.Errorf("token without the email scope: %d %v, want 200 without email", status, body)
	}
	f.clock.Advance(time.Minute)
	if status, _ := f.me(t, headers(short)); status != http.StatusUnauthorized {
		t.Errorf("expired token: %d, want 401", status)
	}
	revoked, _ := f.fp.IssueToken("m-bob", []string{"openid", "profile"}, time.Hour, 0)
	f.fp.Revoke("m-bob")
	if status, _ := f.me(t, headers(revoked)); status != http.StatusUnauthorized {
		t.Errorf("revoked token: %d, want 401", status)
	}
}

func TestDailyQuotasResetAtMidnightUTC(t *testing.T) {
	t.Parallel()
	f := setup(t, platformtest.Options{AppDailyQuota: 3, MemberDailyQuota: 2})
	f.clock.Set(time.Date(2026, 11, 20, 23, 59, 0, 0, time.UTC))
	ann, _ := f.fp.IssueToken("m-ann", []string{"openid", "profile"}, 72*time.Hour, 0)
	bob, _ := f.fp.IssueToken("m-bob", []string{"openid", "profile"}, 72*time.Hour, 0)
	want := func(tok string, status int, what string) {
		t.Helper()
		if got, body := f.me(t, headers(tok)); got != status {
			t.Fatalf("%s: %d, want %d (%v)", what, got, status, body)
		}
	}
	want(ann, 200, "ann 1")
	want(ann, 200, "ann 2")
	want(ann, 429, "ann 3: member quota")
	want(bob, 200, "bob 1")
	want(bob, 429, "bob 2: app quota")
	f.clock.Set(time.Date(2026, 11, 20, 23, 59, 59, 0, time.UTC))
	want(bob, 429, "bob at 23:59:59")
	f.clock.Set(time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC))
	want(ann, 200, "ann after midnight UTC")
	want(bob, 200, "bob after midnight UTC")

	// Midnight UTC, not local midnight: 23:30 in New York is 04:30 UTC.
	ny, _ := time.LoadLocation("America/New_York")
	if ny != nil {
		f.fp.SetQuotas(1, 0)
		f.clock.Set(time.Date(2026, 11, 21, 23, 0, 0, 0, ny))
		want(ann, 200, "ann, new UTC day")
		f.clock.Set(time.Date(2026, 11, 22, 0, 30, 0, 0, ny)) // local midnight passed, same UTC day
		want(ann, 429, "ann after local midnight")
	}
}

// oauthFlow runs the consent screen and returns the redirect's query.
func (f *fixture) consent(t *testing.T, q url.Values) url.Values {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(f.srv.URL + platformtest.PathAuthorize + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("consent screen: %s", resp.Status)
	}
	loc, _ := url.Parse(resp.Header.Get("Location"))
	return loc.Query()
}

func (f *fixture) exchange(t *testing.T, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(f.srv.URL+platformtest.PathToken, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	return resp.StatusCode, body
}

func challenge(v string) string {
	s := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(s[:])
}

func TestAuthorizationCodeWithPKCE(t *testing.T) {
	t.Parallel()
	f := setup(t, platformtest.Options{RefreshTokenTTL: 365 * 24 * time.Hour, RedirectURLs: []string{"https://enrichq.example/cb"}})
	f.fp.SignIn("m-ann")
	verifier := "a-verifier-of-at-least-43-characters-0123456789"
	auth := url.Values{"response_type": {"code"}, "client_id": {"test-client"}, "redirect_uri": {"https://enrichq.example/cb"},
		"state": {"st-1"}, "scope": {"openid profile email"}, "code_challenge": {challenge(verifier)}, "code_challenge_method": {"S256"}}

	back := f.consent(t, auth)
	code := back.Get("code")
	if code == "" || back.Get("state") != "st-1" {
		t.Fatalf("consent redirect: %v", back)
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {"https://enrichq.example/cb"},
		"client_id": {"test-client"}, "client_secret": {"test-secret"}}
	if status, body := f.exchange(t, with2(form, "code_verifier", "wrong-verifier")); status != 400 || body["error"] != "invalid_grant" {
		t.Fatalf("wrong verifier: %d %v", status, body)
	}
	if status, body := f.exchange(t, with2(form, "client_secret", "nope")); status != 401 || body["error"] != "invalid_client" {
		t.Fatalf("wrong secret: %d %v", status, body)
	}
	status, tok := f.exchange(t, with2(form, "code_verifier", verifier))
	if status != 200 || tok["access_token"] == "" || tok["refresh_token"] == nil || tok["scope"] != "openid profile email" {
		t.Fatalf("exchange: %d %v", status, tok)
	}
	if status, body := f.exchange(t, with2(form, "code_verifier", verifier)); status != 400 || body["error"] != "invalid_grant" {
		t.Fatalf("code used twice: %d %v", status, body)
	}
	if status, _ := f.me(t, headers(tok["access_token"].(string))); status != 200 {
		t.Fatalf("/rest/me with the new token: %d", status)
	}
	status, again := f.exchange(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)},
		"client_id": {"test-client"}, "client_secret": {"test-secret"}})
	if status != 200 || again["access_token"] == tok["access_token"] {
		t.Fatalf("refresh: %d %v", status, again)
	}

	// Refusals on the consent screen.
	if q := f.consent(t, without2(auth, "code_challenge")); q.Get("error") != "invalid_request" {
		t.Errorf("without PKCE: %v", q)
	}
	if q := f.consent(t, with2(auth, "code_challenge_method", "plain")); q.Get("error") != "invalid_request" {
		t.Errorf("PKCE plain: %v", q)
	}
	if q := f.consent(t, without2(auth, "state")); q.Get("error") != "invalid_request" {
		t.Errorf("without state: %v", q)
	}
	f.fp.Deny(true)
	if q := f.consent(t, auth); q.Get("error") != "access_denied" || q.Get("state") != "st-1" {
		t.Errorf("declined: %v", q)
	}
	resp, _ := http.Get(f.srv.URL + platformtest.PathAuthorize + "?" + with2(auth, "redirect_uri", "https://evil.example/cb").Encode())
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("unregistered redirect: %s, want 400 without a redirect", resp.Status)
	}
}

func with2(v url.Values, k, s string) url.Values {
	out := url.Values{}
	for key, vals := range v {
		out[key] = vals
	}
	out.Set(k, s)
	return out
}

func without2(v url.Values, k string) url.Values {
	out := with2(v, k, "")
	out.Del(k)
	return out
}
