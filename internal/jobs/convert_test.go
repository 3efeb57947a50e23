package jobs

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

// A paid answer read back from the cache is the answer that was stored,
// the vendor's raw record included (unknown fields, odd types), in both
// forms EncodeCachedAnswer writes: the raw one (ProcessorConfig.CacheRaw, the
// binaries' default) and the typed one.
func TestCachedAnswersRoundTrip(t *testing.T) {
	profile, err := enrich.ParseProfileRaw([]byte(`{"profile_url": "https://p.example/in/jane", "name": "Jane \u00e9", ` +
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
			stored := EncodeCachedAnswer(tc.stage, tc.a.profile, tc.a.email, tc.a.phones, true)
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

			// The typed form, as written with ENRICHQ_CACHE_RAW=false and by
			// versions before v0.7.
			old := EncodeCachedAnswer(tc.stage, tc.a.profile, tc.a.email, tc.a.phones, false)
			if strings.Contains(string(old), `"raw"`) {
				t.Fatalf("typed form %s", old)
			}
			got, err = decodeCached(tc.stage, store.CacheEntry{Stage: tc.stage, Matched: true, Result: old})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(compacted(got), compacted(tc.a)) {
				t.Errorf("old form read back %+v, stored %+v", got, tc.a)
			}
		})
	}

	// An answer without the vendor's raw record is stored typed.
	typed := answer{profile: &enrich.Profile{ProfileURL: "https://p.example/in/x", Name: "X"}}
	stored := encodeCachedRaw("profile", typed)
	if strings.Contains(string(stored), `"raw"`) {
		t.Fatalf("stored as %s", stored)
	}
	if got, err := decodeCached("profile", store.CacheEntry{Matched: true, Result: stored}); err != nil || !reflect.DeepEqual(compacted(got), typed) {
		t.Errorf("typed answer read back %+v, %v", got, err)
	}
	// A record that says nothing found is no cached answer.
	if _, err := decodeCached("profile", store.CacheEntry{Matched: true, Result: []byte(`{"raw": {"name": "no url"}}`)}); err == nil {
		t.Error("a cached record without profile_url was taken as an answer")
	}
}

// compacted is a with its raw records as the typed form keeps them: compact
// JSON (encoding/json compacts a RawMessage), none for null.
func compacted(a answer) answer {
	c := func(raw json.RawMessage) json.RawMessage {
		var b bytes.Buffer
		if len(raw) == 0 || string(raw) == "null" || json.Compact(&b, raw) != nil {
			return nil
		}
		return b.Bytes()
	}
	if a.profile != nil {
		p := *a.profile
		p.Raw = c(p.Raw)
		a.profile = &p
	}
	if a.email != nil {
		e := *a.email
		e.Raw = c(e.Raw)
		a.email = &e
	}
	if a.phones != nil {
		ph := *a.phones
		ph.Raw = c(ph.Raw)
		a.phones = &ph
	}
	return a
}
