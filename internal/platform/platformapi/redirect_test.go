package platformapi_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/platform/platformapi"
)

// The platform client follows no redirect with a member's token: the token
// never leaves for the redirect's target (same host, another port, where
// net/http would keep the Authorization header), and the 3xx is refused.
func TestClientFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	var reached, withAuth atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Authorization") != "" {
			withAuth.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id": "m-x"}`))
	}))
	t.Cleanup(target.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	c, err := platformapi.NewClient(platformapi.Config{BaseURL: redirector.URL, Version: "202611", HTTPClient: &http.Client{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Me(t.Context(), "member-token")
	if pe, ok := platformapi.AsError(err); !ok || pe.Class != platformapi.ClassRejected || pe.Status != http.StatusTemporaryRedirect {
		t.Errorf("Me behind a redirect: %v, want rejected with the 307", err)
	}
	if reached.Load() != 0 || withAuth.Load() != 0 {
		t.Errorf("the redirect's target was reached %d times (%d with Authorization)", reached.Load(), withAuth.Load())
	}
}
