package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/apitest"
	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// apiOver starts another API on b with deps adjusted by adjust, over TLS
// when tls, as a stack for person.
func apiOver(t *testing.T, b *jobstest.Bundle, tls bool, adjust func(*service.Service, *httpapi.Deps)) *stack {
	t.Helper()
	svc := service.New(service.Config{Store: b.Store, Submitter: b.Submitter})
	deps := httpapi.Deps{Service: svc, Log: b.Log}
	adjust(svc, &deps)
	var api *httptest.Server
	if tls {
		api = httptest.NewTLSServer(httpapi.NewServer(deps))
	} else {
		api = httptest.NewServer(httpapi.NewServer(deps))
	}
	t.Cleanup(api.Close)
	return &stack{Stack: &apitest.Stack{Bundle: b, Service: svc, API: api, URL: api.URL}, clock: &clock{}}
}

// A session lives no longer than its key: once the key is removed from
// ENRICHQ_API_KEYS (the API restarted without it) or revoked in Postgres
// behind the API's back, the session's next request is sent to sign in and
// the session is gone, whatever API it reaches.
func TestSessionEndsWithItsKey(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	const envKey = "web-env-key-0123456789"
	_, storedKey, err := b.Store.CreateAPIKey(context.Background(), tenantA, "web", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The API with both keys, and the same API restarted without the
	// bootstrap key.
	before := apiOver(t, b, false, func(svc *service.Service, d *httpapi.Deps) {
		d.Keys = httpapi.NewStoreKeys(httpapi.NewStaticKeys(map[string]string{envKey: tenantA}), svc)
	})
	after := apiOver(t, b, false, func(svc *service.Service, d *httpapi.Deps) {
		d.Keys = httpapi.NewStoreKeys(httpapi.NewStaticKeys(map[string]string{}), svc)
	})
	// at is the person's path after GET /ui/jobs on s, with the cookies of p.
	at := func(s *stack, p *person) string {
		t.Helper()
		resp, _ := (&person{t: t, s: s, client: p.client}).get("/ui/jobs") // cookies are not kept per port
		return resp.Request.URL.Path
	}

	t.Run("RemovedFromTheEnvironment", func(t *testing.T) {
		p := before.person(t)
		p.signIn(envKey)
		sessions := storetest.WebSessions(t, b.Store)
		if got := at(after, p); got != "/ui/signin" {
			t.Fatalf("the session of a removed key: at %s, want the sign-in page", got)
		}
		if n := storetest.WebSessions(t, b.Store); n != sessions-1 {
			t.Errorf("the session of a removed key: %d sessions, want %d", n, sessions-1)
		}
		if got := at(before, p); got != "/ui/signin" {
			t.Errorf("the ended session opens %s again where its key is known", got)
		}
	})

	t.Run("RevokedInPostgres", func(t *testing.T) {
		p := before.person(t)
		p.signIn(storedKey)
		if got := at(after, p); got != "/ui/jobs" {
			t.Fatalf("a live stored key's session: at %s", got)
		}
		keys, err := b.Store.ListAPIKeys(context.Background(), tenantA)
		if err != nil || len(keys) != 1 {
			t.Fatalf("keys: %v, %v", keys, err)
		}
		sessions := storetest.WebSessions(t, b.Store)
		storetest.RevokeAPIKeyInSQL(t, b.Store, keys[0].ID)
		if got := at(before, p); got != "/ui/signin" {
			t.Fatalf("the session of a revoked key: at %s, want the sign-in page", got)
		}
		if n := storetest.WebSessions(t, b.Store); n != sessions-1 {
			t.Errorf("the session of a revoked key: %d sessions, want %d", n, sessions-1)
		}
	})
}

// Any signed-in person may sign out, whatever their key's scopes: a
// submit-only key (which cannot read the jobs list it lands on) too.
func TestSignOutNeedsNoScope(t *testing.T) {
	t.Parallel()
	s := newStack(t, jobstest.Options{NoWorker: true}, false)
	p := s.person(t)
	_, page := p.get("/ui/signin")
	resp, page := p.post("/ui/signin", url.Values{"csrf": {csrf(t, page)}, "key": {keySubmit}})
	if resp.Request.URL.Path != "/ui/jobs" || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a submit-only key signed in: %s at %s", resp.Status, resp.Request.URL.Path)
	}
	if resp, _ := p.get("/ui/jobs/new"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the new-job page of a submit-only key: %s", resp.Status)
	}
	resp, page = p.post("/ui/signout", url.Values{"csrf": {csrf(t, page)}})
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ui/signin" {
		t.Fatalf("sign out with a submit-only key: %s at %s\n%.600s", resp.Status, resp.Request.URL.Path, page)
	}
	if resp, _ := p.get("/ui/jobs/new"); resp.Request.URL.Path != "/ui/signin" {
		t.Fatalf("signed out, the new-job page is at %s", resp.Request.URL.Path)
	}
}

// Over TLS, and behind a proxy configured as ending TLS, the page's
// cookies are Secure and its answers carry Strict-Transport-Security; on
// plain HTTP neither.
func TestOverTLS(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	withKeys := func(_ *service.Service, d *httpapi.Deps) { d.Keys = apitest.Keys{keyA: {Tenant: tenantA, KeyID: "ka"}} }
	for _, c := range []struct {
		name string
		s    *stack
		tls  bool
	}{
		{"plain HTTP", apiOver(t, b, false, withKeys), false},
		{"TLS", apiOver(t, b, true, withKeys), true},
		{"behind a TLS proxy", apiOver(t, b, false, func(svc *service.Service, d *httpapi.Deps) { withKeys(svc, d); d.BehindTLSProxy = true }), true},
	} {
		client := c.s.API.Client() // trusts the TLS server's certificate
		resp, err := client.Get(c.s.URL + "/ui/signin")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		hsts := resp.Header.Get("Strict-Transport-Security")
		if c.tls != strings.HasPrefix(hsts, "max-age=") {
			t.Errorf("%s: Strict-Transport-Security %q", c.name, hsts)
		}
		if cs := resp.Cookies(); len(cs) != 1 || cs[0].Secure != c.tls {
			t.Errorf("%s: cookies %+v, want one, Secure %v", c.name, cs, c.tls)
		}
	}
}
