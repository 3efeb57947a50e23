package pdl

import (
	"encoding/json"
	"testing"
)

// FuzzDecode: no answer, however broken, panics a decoder; a bulk answer
// gives one item per request; every Raw is valid JSON.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`[{"status":200,"likelihood":9,"data":{"linkedin_url":"platform.example/in/a","work_email":"a@b.co","mobile_phone":"+1"},"metadata":{"enrichq_item":0}},{"status":404,"metadata":{"enrichq_item":1}}]`), 2)
	f.Add([]byte(`{"status":200,"likelihood":"x","data":{"personal_emails":[1,"p@q.co"],"phone_numbers":null}}`), 1)
	f.Add([]byte(`[{"status":400,"error":{"type":7},"metadata":{"enrichq_item":-1}},null,3,"x"]`), 3)
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		n = max(0, min(n, 200))
		items, err := bulkItems(body, n)
		if err == nil && len(items) != n {
			t.Fatalf("%d items for %d requests", len(items), n)
		}
		for _, it := range items {
			checkRaw(t, it.found)
		}
		if f, err := decodeSingle(body); err == nil {
			checkRaw(t, f)
		}
	})
}

func checkRaw(t *testing.T, f found) {
	t.Helper()
	if f.profile != nil && !json.Valid(f.profile.Raw) {
		t.Fatalf("profile Raw %q", f.profile.Raw)
	}
	if f.email != nil && !json.Valid(f.email.Raw) {
		t.Fatalf("email Raw %q", f.email.Raw)
	}
	if f.phones != nil && !json.Valid(f.phones.Raw) {
		t.Fatalf("phones Raw %q", f.phones.Raw)
	}
}
