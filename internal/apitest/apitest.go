// Package apitest starts the API for tests outside internal/httpapi: the
// service over a real pipeline (jobstest: Postgres, Redis, asynq workers,
// the fake vendor), served by httpapi over HTTP, with the scheduler's
// services stepped in the background and, on request, the platform's API
// against a fake platform. The web page, the MCP server, the end-to-end
// tests and the CLI's tests all start it so.
package apitest

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/httpapi"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/platform"
	"github.com/enrichq/enrichq/internal/platform/platformapi"
	"github.com/enrichq/enrichq/internal/platform/platformtest"
	"github.com/enrichq/enrichq/internal/secretbox"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/store"
)

// Options shape a Stack.
type Options struct {
	// Pipeline shapes what runs under the API (workers, fake vendor).
	Pipeline jobstest.Options
	// Keys are the API keys with their principals; nil: Static's.
	Keys Keys
	// Static are bootstrap keys, each of a tenant with every scope
	// (httpapi.NewStaticKeys); with Stored, before the stored keys.
	Static map[string]string
	// Stored: keys created in the store (`api keys create`) are known too.
	Stored bool
	// Service adjusts the service's configuration; Deps the API's (its
	// Now is the service's clock too, unless Service sets one).
	Service func(*service.Config)
	Deps    func(*httpapi.Deps)
	// Scheduler steps the scheduler's services in the background (what
	// marks jobs finished); WaitJob steps them too.
	Scheduler bool
	// Platform serves the platform's API against a fake platform.
	Platform bool
}

// Stack is a running API.
type Stack struct {
	*jobstest.Bundle
	Service *service.Service
	API     *httptest.Server
	URL     string
	// Platform is the fake platform of a stack with Options.Platform; nil otherwise.
	Platform *platformtest.Platform
}

// Start starts a stack; everything stops when the test ends.
func Start(t *testing.T, o Options) *Stack {
	t.Helper()
	b := jobstest.New(t, o.Pipeline)
	cfg := service.Config{Store: b.Store, Submitter: b.Submitter}
	var (
		fp    *platformtest.Platform
		oauth *oauth2.Config
	)
	if o.Platform {
		fp, oauth, cfg.Platform = fakePlatform(t, b)
	}
	if o.Service != nil {
		o.Service(&cfg)
	}
	deps := httpapi.Deps{Log: b.Log}
	if o.Deps != nil {
		o.Deps(&deps)
	}
	if cfg.Now == nil {
		cfg.Now = deps.Now // one clock for the API and the service
	}
	svc := service.New(cfg)
	deps.Service = svc
	if deps.Keys == nil {
		deps.Keys = o.keys(svc)
	}
	api := httptest.NewServer(httpapi.NewServer(deps))
	t.Cleanup(api.Close)
	if oauth != nil {
		oauth.RedirectURL = api.URL + "/v1/platform/callback" // known once the server listens
	}
	if o.Scheduler {
		runScheduler(t, b)
	}
	return &Stack{Bundle: b, Service: svc, API: api, URL: api.URL, Platform: fp}
}

func (o Options) keys(svc *service.Service) httpapi.Keys {
	switch {
	case o.Keys != nil:
		return o.Keys
	case o.Stored:
		var boot *httpapi.StaticKeys
		if o.Static != nil {
			boot = httpapi.NewStaticKeys(o.Static)
		}
		return httpapi.NewStoreKeys(boot, svc)
	default:
		return httpapi.NewStaticKeys(o.Static)
	}
}

// fakePlatform is the platform's service against a fake platform; its
// OAuth redirect is set once the API listens.
func fakePlatform(t *testing.T, b *jobstest.Bundle) (*platformtest.Platform, *oauth2.Config, *platform.Platform) {
	t.Helper()
	fopts := platformtest.DefaultOptions()
	fp := platformtest.New(fopts)
	fsrv := httptest.NewServer(fp)
	t.Cleanup(fsrv.Close)
	client, err := platformapi.NewClient(platformapi.Config{BaseURL: fsrv.URL, Version: "202611"})
	if err != nil {
		t.Fatal(err)
	}
	oauth, err := platformapi.NewOAuth(platformapi.OAuthConfig{AuthURL: fsrv.URL + platformtest.PathAuthorize,
		TokenURL: fsrv.URL + platformtest.PathToken, ClientID: fopts.ClientID, ClientSecret: fopts.ClientSecret,
		RedirectURL: "http://placeholder/v1/platform/callback"})
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, secretbox.KeySize)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	if err != nil {
		t.Fatal(err)
	}
	p, err := platform.New(b.Store, nil, platform.Config{Client: client, OAuth: oauth, Box: box}, b.Log)
	if err != nil {
		t.Fatal(err)
	}
	return fp, oauth, p
}

// runScheduler steps the scheduler's services, as cmd/scheduler runs them,
// until the test ends.
func runScheduler(t *testing.T, b *jobstest.Bundle) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_, _ = b.Maintainer.RunOnce(ctx)
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// Call sends a request with a bearer key ("" for none) and a content type
// ("" for none), and returns the answer with its body read.
func (s *Stack) Call(t *testing.T, method, path, key, ctype string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

// Keys are API keys and their principals, as a test wants them (scopes,
// ceilings); a key is live while it is among them.
type Keys map[string]service.Principal

// Principal implements httpapi.Keys.
func (k Keys) Principal(_ context.Context, key string) (service.Principal, bool, error) {
	p, ok := k[key]
	return p, ok, nil
}

// KeyLive implements httpapi.Keys.
func (k Keys) KeyLive(_ context.Context, tenant, keyID string) (bool, error) {
	for _, p := range k {
		if p.Tenant == tenant && p.KeyID == keyID {
			return true, nil
		}
	}
	return false, nil
}

// CreateKey stores an API key of tenant named name (`api keys create`),
// with scopes (nil: domain.DefaultKeyScopes) and its own MCP ceiling (nil: the
// operator's), and returns its id and the key; a stack with Options.Stored
// knows it.
func (s *Stack) CreateKey(t *testing.T, tenant, name string, scopes []domain.Scope, mcpMaxBudget *int64) (id, key string) {
	t.Helper()
	ak, key, err := s.Store.NewAPIKey(context.Background(), store.NewAPIKey{Tenant: tenant, Name: name, Scopes: scopes, MCPMaxBudget: mcpMaxBudget})
	if err != nil {
		t.Fatal(err)
	}
	return ak.ID, key
}

// CompaniesCSV is a CSV list of n companies with an extra column:
// "ref,company,owner", then "crm-001,Company 1 AG,owner-1" and so on.
func CompaniesCSV(n int) string {
	var b strings.Builder
	b.WriteString("ref,company,owner\n")
	for i := range n {
		fmt.Fprintf(&b, "crm-%03d,Company %d AG,owner-%d\n", i+1, i+1, i%3)
	}
	return b.String()
}
