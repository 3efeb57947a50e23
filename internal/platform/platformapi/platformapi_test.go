package platformapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/enrichq/enrichq/internal/platform/platformapi"
	"github.com/enrichq/enrichq/internal/platform/platformtest"
)

// platformFixture is the client against the fake platform over HTTP.
type platformFixture struct {
	fp     *platformtest.Platform
	srv    *httptest.Server
	client *platformapi.Client
	token  string
}

// stripHeader is a transport that drops one header of every request, to
// make the platform answer what it answers a client that forgot it.
type stripHeader struct {
	name string
	next http.RoundTripper
}

func (s stripHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Del(s.name)
	return s.next.RoundTrip(r)
}

func newPlatformFixture(t *testing.T, version string, transport http.RoundTripper) *platformFixture {
	t.Helper()
	fp := platformtest.New(platformtest.Options{RetiredVersions: []string{"202401"}})
	srv := httptest.NewServer(fp)
	t.Cleanup(srv.Close)
	fp.AddMember(platformtest.Member{ID: "m-ann", FirstName: "Ann", LastName: "Lee", Headline: "VP Sales at Acme", VanityName: "ann-lee", Email: "ann@example.com"})
	c, err := platformapi.NewClient(platformapi.Config{BaseURL: srv.URL, Version: version, HTTPClient: &http.Client{Timeout: 5 * time.Second, Transport: transport}})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := fp.IssueToken("m-ann", []string{"openid", "profile", "email"}, time.Hour, 0)
	return &platformFixture{fp: fp, srv: srv, client: c, token: tok}
}

func TestPlatformVersionValidatedBeforeAnyCall(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "2026-11", "20261", "2026111", "202613", "202600", "abcdef", "199912"} {
		if _, err := platformapi.NewClient(platformapi.Config{BaseURL: "https://api.platform.example", Version: v}); err == nil {
			t.Errorf("version %q accepted", v)
		}
	}
	for _, v := range []string{"202611", "202501", "203012"} {
		if err := platformapi.ValidateVersion(v); err != nil {
			t.Errorf("version %q refused: %v", v, err)
		}
	}
}

func TestPlatformMe(t *testing.T) {
	t.Parallel()
	f := newPlatformFixture(t, "202611", nil)
	p, err := f.client.Me(context.Background(), f.token)
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != "m-ann" || p.Name != "Ann Lee" || p.FirstName != "Ann" || p.Headline != "VP Sales at Acme" || p.VanityName != "ann-lee" || p.Email != "ann@example.com" {
		t.Errorf("profile %+v", p)
	}
	// profilePicture is an object in the answer: left in Raw, not in Picture.
	if p.Picture != "" || !strings.Contains(string(p.Raw), `"profilePicture"`) || !strings.Contains(string(p.Raw), `"x_fake_served_at"`) {
		t.Errorf("raw answer not kept as received: picture %q, raw %s", p.Picture, p.Raw)
	}
}

func TestPlatformErrorClasses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	check := func(t *testing.T, err error, class platformapi.Class, msg string) {
		t.Helper()
		pe, ok := platformapi.AsError(err)
		if !ok {
			t.Fatalf("err = %v, want a *PlatformError", err)
		}
		if pe.Class != class || (msg != "" && pe.Message != msg) {
			t.Errorf("class %s %q, want %s %q", pe.Class, pe.Message, class, msg)
		}
	}

	t.Run("400 missing version", func(t *testing.T) {
		t.Parallel()
		f := newPlatformFixture(t, "202611", stripHeader{"Platform-Version", http.DefaultTransport})
		_, err := f.client.Me(ctx, f.token)
		check(t, err, platformapi.ClassVersionMissing, "request rejected; check that Platform-Version is set")
		if pe, _ := platformapi.AsError(err); !pe.StopsApp() || pe.Status != 400 {
			t.Errorf("400: StopsApp %v, status %d", pe.StopsApp(), pe.Status)
		}
	})
	t.Run("426 retired version", func(t *testing.T) {
		t.Parallel()
		f := newPlatformFixture(t, "202401", nil)
		_, err := f.client.Me(ctx, f.token)
		check(t, err, platformapi.ClassVersionRetired, "platform version 202401 is retired; set a newer one")
		if pe, _ := platformapi.AsError(err); !pe.StopsApp() {
			t.Error("426 does not stop the app")
		}
	})
	t.Run("401 revoked", func(t *testing.T) {
		t.Parallel()
		f := newPlatformFixture(t, "202611", nil)
		f.fp.Revoke("m-ann")
		_, err := f.client.Me(ctx, f.token)
		check(t, err, platformapi.ClassTokenInvalid, "")
		if strings.Contains(err.Error(), f.token) {
			t.Errorf("the error holds the token: %v", err)
		}
	})
	t.Run("403 scope", func(t *testing.T) {
		t.Parallel()
		f := newPlatformFixture(t, "202611", nil)
		tok, _ := f.fp.IssueToken("m-ann", []string{"openid"}, time.Hour, 0)
		_, err := f.client.Me(ctx, tok)
		check(t, err, platformapi.ClassScope, "")
	})
	t.Run("429 daily quota", func(t *testing.T) {
		t.Parallel()
		f := newPlatformFixture(t, "202611", nil)
		f.fp.SetQuotas(0, 1)
		if _, err := f.client.Me(ctx, f.token); err != nil {
			t.Fatal(err)
		}
		_, err := f.client.Me(ctx, f.token)
		check(t, err, platformapi.ClassQuota, "")
	})
	t.Run("503 transient", func(t *testing.T) {
		t.Parallel()
		f := newPlatformFixture(t, "202611", nil)
		f.fp.FailNext(503)
		_, err := f.client.Me(ctx, f.token)
		check(t, err, platformapi.ClassTransient, "")
		if _, err := f.client.Me(ctx, f.token); err != nil {
			t.Errorf("after the fault: %v", err)
		}
	})
	t.Run("no call with an empty token", func(t *testing.T) {
		t.Parallel()
		f := newPlatformFixture(t, "202611", nil)
		_, err := f.client.Me(ctx, " ")
		check(t, err, platformapi.ClassTokenInvalid, "")
		if n := f.fp.Requests(""); n != 0 {
			t.Errorf("%d requests reached the platform", n)
		}
	})
}

func TestColdLookupRefused(t *testing.T) {
	t.Parallel()
	err := error(platformapi.ColdLookupError("https://platform.example/in/jane-doe"))
	if !errors.Is(err, platformapi.ErrColdLookup) || !strings.Contains(err.Error(), "Cold lookups go to the vendor") {
		t.Errorf("refusal: %v", err)
	}
	for s, want := range map[string]bool{
		"https://platform.example/in/jane-doe": true,
		"http://x.example/in/a":                true,
		"www.platform.example/in/jane":         true,
		"platform.com/in/jane":                 true,
		"/in/jane-doe":                         true,
		"m-ann":                                false,
		"3f1e9b1c-8f4b-4c1e-9d55-4b7b9f2f0a11": false,
		"urn:li:person:AbC123":                 false,
	} {
		if got := platformapi.LooksLikeProfileURL(s); got != want {
			t.Errorf("LooksLikeProfileURL(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestNextQuotaReset(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ now, want time.Time }{
		{time.Date(2026, 11, 20, 23, 59, 50, 0, time.UTC), time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 11, 21, 0, 0, 10, 0, time.UTC), time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 12, 31, 20, 0, 0, 0, time.FixedZone("EST", -5*3600)), time.Date(2027, 1, 2, 0, 0, 0, 0, time.UTC)},
	} {
		if got := platformapi.NextQuotaReset(tc.now); !got.Equal(tc.want) {
			t.Errorf("NextQuotaReset(%s) = %s, want %s", tc.now, got, tc.want)
		}
	}
}

func TestPlatformTokenLife(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	tok := (&oauth2.Token{AccessToken: "a", RefreshToken: "r", ExpiresIn: 3600}).WithExtra(map[string]any{
		"refresh_token_expires_in": float64(86400), "scope": "openid,profile email"})
	l := platformapi.TokenLifeOf(tok, now)
	if !l.Expiry.Equal(now.Add(time.Hour)) || !l.RefreshExpiry.Equal(now.Add(24*time.Hour)) || strings.Join(l.Scopes, " ") != "openid profile email" {
		t.Errorf("life %+v", l)
	}
	if l := platformapi.TokenLifeOf(&oauth2.Token{AccessToken: "a"}, now); !l.Expiry.IsZero() || !l.RefreshExpiry.IsZero() || l.Scopes != nil {
		t.Errorf("no lifetime given: %+v", l)
	}
	if _, err := platformapi.NewOAuth(platformapi.OAuthConfig{AuthURL: "https://p.example/auth"}); err == nil ||
		!strings.Contains(err.Error(), "client secret") {
		t.Errorf("missing OAuth settings: %v", err)
	}
}
