package seed_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/seed"
)

// elsewhere is where a redirect points: it counts the requests that reach
// it and those that carry an Authorization header.
func elsewhere(t *testing.T) (url string, reached, withAuth *atomic.Int32) {
	t.Helper()
	reached, withAuth = new(atomic.Int32), new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Authorization") != "" {
			withAuth.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id": "m-x", "profile_url": "https://platform.example/in/x"}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, reached, withAuth
}

// redirector answers every request with a redirect to target (same host,
// another port: net/http would keep the Authorization header).
func redirector(t *testing.T, status int, target string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, status)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The vendor client follows no redirect: the key never leaves for the
// redirect's target, even with a caller's client that would follow it, and
// the 3xx is a transient error.
func TestVendorClientFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		target, reached, withAuth := elsewhere(t)
		base := redirector(t, status, target)
		for _, hc := range []*http.Client{nil, {Timeout: 5 * time.Second}} {
			c := client(t, base, func(cfg *seed.Config) { cfg.HTTPClient = hc })
			_, err := c.Profile(ctx(t), enrich.ProfileQuery{ProfileURL: "https://platform.example/in/x"}, "k")
			e := vendorError(t, err, enrich.ClassTransient)
			if e.Status != status {
				t.Errorf("%d: error status %d", status, e.Status)
			}
		}
		if reached.Load() != 0 || withAuth.Load() != 0 {
			t.Errorf("%d: the redirect's target was reached %d times (%d with Authorization)", status, reached.Load(), withAuth.Load())
		}
	}
}

// NoRedirects copies the caller's client and leaves it unchanged.
func TestNoRedirectsCopiesTheClient(t *testing.T) {
	t.Parallel()
	hc := &http.Client{}
	_ = enrich.NoRedirects(hc)
	if hc.CheckRedirect != nil {
		t.Error("NoRedirects changed the caller's client")
	}
}
