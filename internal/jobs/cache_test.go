package jobs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/seed"
	"github.com/enrichq/enrichq/internal/store"
)

// A paid answer read back from the cache is the answer that was stored,
// the vendor's raw record included (unknown fields, odd types). An entry
// that is not in the raw form cannot be read: a miss, bought again.
func TestCachedAnswersRoundTrip(t *testing.T) {
	profile, err := seed.ParseProfileRaw([]byte(`{"profile_url": "https://p.example/in/jane", "name": "Jane \u00e9", ` +
		`"headline": 7, "technographics": ["AWS", 3], "vendor_score": 0.93}`))
	if err != nil {
		t.Fatal(err)
	}
	email, err := enrich.ParseEmailRaw([]byte(`{"email": "jane@example.com", "confidence": 0.8, "verified": "yes", "extra": [1]}`))
	if err != nil {
		t.Fatal(err)
	}
	phones, err := enrich.ParsePhonesRaw([]byte(`{"phones": [{"number": "+1 415", "type": "mobile"}, {"type": "work"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		stage domain.Stage
		a     answer
	}{
		{domain.StageProfile, answer{profile: profile}},
		{domain.StageEmail, answer{email: email}},
		{domain.StagePhone, answer{phones: phones}},
	} {
		t.Run(string(tc.stage), func(t *testing.T) {
			stored := EncodeCachedAnswer(tc.stage, tc.a.profile, tc.a.email, tc.a.phones)
			if !strings.HasPrefix(string(stored), `{"raw":`) || !json.Valid(stored) {
				t.Fatalf("stored as %s", stored)
			}
			got, err := decodeCached(tc.stage, store.CacheEntry{Stage: tc.stage, Matched: true, Result: stored})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.a) {
				t.Errorf("read back %+v, stored %+v", got, tc.a)
			}
		})
	}

	// An answer without the vendor's raw record is not cached.
	if stored := encodeCached("profile", answer{profile: &enrich.Profile{ProfileURL: "https://p.example/in/x", Name: "X"}}, ""); stored != nil {
		t.Errorf("an answer without its raw record cached as %s", stored)
	}
	// Entries in any other form are no answer: typed, empty, not JSON.
	for _, stored := range []string{`{"profile": {"ProfileURL": "https://p.example/in/x", "Name": "X"}}`, `{"raw": null}`, `{}`, `not json`} {
		if a, err := decodeCached("profile", store.CacheEntry{Matched: true, Result: []byte(stored)}); err == nil {
			t.Errorf("%s read as an answer: %+v", stored, a)
		}
	}
	// A record that says nothing found is no cached answer.
	if _, err := decodeCached("profile", store.CacheEntry{Matched: true, Result: []byte(`{"raw": {"name": "no url"}}`)}); err == nil {
		t.Error("a cached record without profile_url was taken as an answer")
	}
}
