package enrichtest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
)

// The Hunter fake on its own wire: the key as api_key or X-API-KEY, a
// found email billed one search, a miss free (null or 404), verdicts billed
// but for webmail, disposable and unknown, 429 at a quota's end, 403 in a
// storm, 451 for an opted-out person, and its counters on GET /v2/account.
func TestHunterFakeWire(t *testing.T) {
	opts := enrichtest.DefaultHunterOptions()
	opts.Knows = func(l enrichtest.Lookup) bool { return l.Name != "Bob Nobody" }
	opts.Suppressed = func(l enrichtest.Lookup) bool { return l.Name == "Opted Out" }
	opts.Searches, opts.StormCalls = 2, 1
	fake := enrichtest.NewHunter(opts)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	get := func(path string, q url.Values, header bool) (int, map[string]any) {
		t.Helper()
		if !header {
			q.Set("api_key", "test-key")
		}
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path+"?"+q.Encode(), nil)
		if header {
			req.Header.Set("X-API-KEY", "test-key")
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
	find := url.Values{"first_name": {"Ada"}, "last_name": {"Lovelace"}, "domain": {"acme.com"}}
	if s, _ := get("/v2/email-finder", find, true); s != http.StatusForbidden {
		t.Fatalf("the storm's first call: %d, want 403", s)
	}
	s, b := get("/v2/email-finder", find, false)
	data, _ := b["data"].(map[string]any)
	if s != 200 || data["email"] != "ada.lovelace@acme.com" {
		t.Fatalf("finder: %d %v", s, b)
	}
	if s, b := get("/v2/email-finder", url.Values{"full_name": {"Bob Nobody"}, "domain": {"acme.com"}}, true); s != 200 || b["data"].(map[string]any)["email"] != nil {
		t.Fatalf("a miss: %d %v", s, b)
	}
	if s, _ := get("/v2/email-finder", url.Values{"full_name": {"Opted Out"}, "domain": {"acme.com"}}, true); s != http.StatusUnavailableForLegalReasons {
		t.Fatalf("an opted-out person: %d, want 451", s)
	}
	if s, _ := get("/v2/email-finder", url.Values{"domain": {"acme.com"}}, true); s != http.StatusBadRequest {
		t.Fatalf("no name: %d, want 400", s)
	}
	if s, _ := get("/v2/email-finder", url.Values{"full_name": {"Grace Hopper"}, "domain": {"acme.com"}}, true); s != 200 {
		t.Fatalf("the second search: %d", s)
	}
	if s, _ := get("/v2/email-finder", url.Values{"full_name": {"Alan Turing"}, "domain": {"acme.com"}}, true); s != http.StatusTooManyRequests {
		t.Fatalf("past the searches' quota: %d, want 429", s)
	}
	for _, addr := range []string{"x@gmail.com", "y@mailinator.com"} {
		if s, b := get("/v2/email-verifier", url.Values{"email": {addr}}, true); s != 200 || b["data"].(map[string]any)["status"] != fake.Verdict(addr) {
			t.Fatalf("verify %s: %d %v", addr, s, b)
		}
	}
	if u := fake.Usage("test-key"); u.Searches != 2 || u.Verifications != 0 {
		t.Fatalf("usage %+v: want 2 searches (a miss, a 451, a 429 free), no verification (webmail, disposable free)", u)
	}
	_, b = get("/v2/account", url.Values{}, true)
	req := b["data"].(map[string]any)["requests"].(map[string]any)
	if req["searches"].(map[string]any)["used"] != float64(2) || req["searches"].(map[string]any)["available"] != float64(2) {
		t.Fatalf("account %v", b)
	}
	resp, err := http.Get(srv.URL + "/v2/account?api_key=wrong")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong key: %d, want 401", resp.StatusCode)
	}
}
