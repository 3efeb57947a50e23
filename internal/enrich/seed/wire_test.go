package seed

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/enrich"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		endpoint string
		status   int
		body     string
		noMatch  bool
		class    enrich.Class
		unknown  bool
		code     string
	}{
		{endpointProfile, 200, `{}`, false, -1, false, ""},
		{endpointProfile, 404, ``, true, -1, false, ""},
		{endpointEmail, 404, `{"error": {"code": "not_found"}}`, true, -1, false, ""},
		{endpointBulk, 404, ``, false, enrich.ClassPermanent, false, "not_found"},
		{endpointProfile, 400, `{"error": {"code": "invalid_request", "message": "m"}}`, false, enrich.ClassPermanent, false, "invalid_request"},
		{endpointProfile, 413, ``, false, enrich.ClassPermanent, false, "request_entity_too_large"},
		{endpointProfile, 422, `{"error": {"code": 12}}`, false, enrich.ClassPermanent, false, "12"},
		{endpointProfile, 401, ``, false, enrich.ClassUnauthorized, false, "unauthorized"},
		{endpointProfile, 403, `{"error": {"code": "plan_required"}}`, false, enrich.ClassForbidden, false, "plan_required"},
		{endpointProfile, 409, ``, false, enrich.ClassTransient, false, "conflict"},
		{endpointProfile, 429, ``, false, enrich.ClassRateLimited, false, "too_many_requests"},
		{endpointProfile, 500, ``, false, enrich.ClassTransient, true, "internal_server_error"},
		{endpointProfile, 503, ``, false, enrich.ClassTransient, false, "service_unavailable"},
		{endpointProfile, 302, ``, false, enrich.ClassTransient, false, "found"},
	} {
		ans, e := classify(tc.endpoint, tc.status, http.Header{}, []byte(tc.body), now)
		if tc.class < 0 {
			if e != nil || (ans == answerNoMatch) != tc.noMatch {
				t.Errorf("%s %d: = %v, %v", tc.endpoint, tc.status, ans, e)
			}
			continue
		}
		if e == nil || e.Class != tc.class || e.OutcomeUnknown != tc.unknown || e.Code != tc.code || e.Status != tc.status {
			t.Errorf("%s %d: = %+v, want class %s unknown %v code %q", tc.endpoint, tc.status, e, tc.class, tc.unknown, tc.code)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"0":                             0,
		"-3":                            0,
		" 12 ":                          12 * time.Second,
		"1.5":                           0,
		"Sun, 01 Mar 2026 00:01:00 GMT": time.Minute,
		"Sat, 28 Feb 2026 00:00:00 GMT": 0,
		"99999999999999999999":          0,
		"9223372036854775807":           time.Duration(9223372036854775807/int64(time.Second)) * time.Second,
	} {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", in, got, want)
		}
	}
}

func FuzzDecodeBulk(f *testing.F) {
	f.Add([]byte(`{"results": [{"index": 0, "profile": {"profile_url": "u"}, "email": {"email": "a@b"}, "phones": [{"number": "+1"}]}]}`), 2)
	f.Add([]byte(`{"results": [{"index": 1, "error": {"code": "x"}}, {"index": 1}, {"index": -1}, "x", null]}`), 3)
	f.Add([]byte(`{"results": null}`), 1)
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		if n < 0 || n > enrich.MaxBulkRows {
			return
		}
		// The one-pass decoding of the results reads what decoding them one
		// by one reads.
		if fast, err := bulkResults(body); err == nil {
			if slow, err := bulkResultsOneByOne(body); err != nil || !reflect.DeepEqual(fast, slow) {
				t.Fatalf("results %+v, one by one %+v (%v)", fast, slow, err)
			}
		}
		items, err := decodeBulk(body, n)
		if err != nil {
			return
		}
		if len(items) != n {
			t.Fatalf("%d items for %d rows", len(items), n)
		}
		for i, it := range items {
			if it.Err == nil && it.Profile != nil && it.Profile.ProfileURL == "" {
				t.Fatalf("row %d: a match without a profile URL", i)
			}
		}
	})
}

func FuzzDecodeProfile(f *testing.F) {
	f.Add([]byte(`{"profile_url": "u", "name": "n", "technographics": ["a", 1]}`))
	f.Add([]byte(`{"profile_url": null}`))
	f.Add([]byte(`[1]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := decodeProfile(body)
		if err == nil && p != nil && strings.TrimSpace(p.ProfileURL) == "" {
			t.Fatal("a match without a profile URL")
		}
		_, _ = enrich.ParseEmailRaw(body)
		_, _ = enrich.ParsePhonesRaw(body)
	})
}

func TestWireRowDomain(t *testing.T) {
	t.Parallel()
	got := wireRow(enrich.ProfileQuery{Name: "CTO", Domain: "acme.com"})
	if len(got) != 2 || got[paramName] != "CTO" || got["domain"] != "acme.com" {
		t.Fatalf("wireRow = %v, want name and domain", got)
	}
	body, err := bulkBody([]enrich.ProfileQuery{{Name: "CTO", Domain: "acme.com"}}, nil)
	if err != nil || string(body) != `{"rows":[{"domain":"acme.com","name":"CTO"}]}` {
		t.Fatalf("bulk body %s, %v", body, err)
	}
}
