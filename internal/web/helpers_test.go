package web_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/httpapi/apitest"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/service"
)

// Two tenants, a key each, and a read-only and a submit-only key of the
// first.
const (
	tenantA   = "acme"
	keyA      = "web-key-acme-0123456789"
	tenantB   = "beta"
	keyB      = "web-key-beta-9876543210"
	keyRead   = "web-key-acme-readonly"
	keySubmit = "web-key-acme-submitonly"
)

// stack is the API (and so the page) over a real pipeline: Postgres,
// Redis, an asynq worker and the fake vendor, with the scheduler's services
// stepped in the background (apitest).
type stack struct {
	*apitest.Stack
	clock *clock
}

// clock is a settable clock for the page's sessions; it follows the real
// one until set.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// newStack starts a stack; withPlatform configures the platform's API
// against a fake platform (the members page); svc, when given, adjusts the
// service's configuration (the vendors).
func newStack(t *testing.T, o jobstest.Options, withPlatform bool, svc ...func(*service.Config)) *stack {
	t.Helper()
	c := &clock{}
	st := apitest.Start(t, apitest.Options{Pipeline: o, Platform: withPlatform, Scheduler: true,
		Service: func(cfg *service.Config) {
			for _, f := range svc {
				f(cfg)
			}
		},
		Keys: apitest.Keys{
			keyA:      {Tenant: tenantA, KeyID: "ka", Scopes: domain.Scopes},
			keyB:      {Tenant: tenantB, KeyID: "kb", Scopes: domain.Scopes},
			keyRead:   {Tenant: tenantA, KeyID: "kr", Scopes: []domain.Scope{domain.ScopeRead}},
			keySubmit: {Tenant: tenantA, KeyID: "ks", Scopes: []domain.Scope{domain.ScopeSubmit}},
		},
		Deps: func(d *httpapi.Deps) { d.Now = c.Now }})
	return &stack{Stack: st, clock: c}
}

// call calls the JSON API with a bearer key and returns the answer's body.
func (s *stack) call(t *testing.T, method, path, key, ctype string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	return s.Call(t, method, path, key, ctype, body)
}

// person is a browser without a browser: a cookie jar that follows
// redirects, for the page's HTTP-level tests.
type person struct {
	t      *testing.T
	s      *stack
	client *http.Client
}

func (s *stack) person(t *testing.T) *person {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &person{t: t, s: s, client: &http.Client{Jar: jar}}
}

// get fetches a page and returns the answer and its body.
func (p *person) get(path string) (*http.Response, string) {
	p.t.Helper()
	resp, err := p.client.Get(p.s.URL + path)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// post sends a form and returns the answer (after redirects) and its body.
func (p *person) post(path string, form url.Values) (*http.Response, string) {
	p.t.Helper()
	resp, err := p.client.PostForm(p.s.URL+path, form)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the CSRF token of the forms of a page's body.
func csrf(t *testing.T, body string) string {
	t.Helper()
	m := csrfInput.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no csrf field in the page:\n%.600s", body)
	}
	return m[1]
}

// signIn signs in with key and returns the jobs page's body.
func (p *person) signIn(key string) string {
	p.t.Helper()
	_, body := p.get("/ui/signin")
	resp, body := p.post("/ui/signin", url.Values{"csrf": {csrf(p.t, body)}, "key": {key}})
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ui/jobs" {
		p.t.Fatalf("sign in: %s at %s:\n%.600s", resp.Status, resp.Request.URL.Path, body)
	}
	return body
}
