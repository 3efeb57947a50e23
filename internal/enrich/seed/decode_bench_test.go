package seed

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/enrich"
)

// bulkAnswer builds a bulk answer of n results the way a vendor may write
// them: full and partial profiles, escapes and non-ASCII, loose types,
// emails, phones, per-row errors, and (with odd) results that are broken.
func bulkAnswer(r *rand.Rand, n int, odd bool) string {
	var b strings.Builder
	b.WriteString(`{"results": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		idx := fmt.Sprint(i)
		if odd {
			switch r.IntN(12) {
			case 0:
				b.WriteString(`null`)
				continue
			case 1:
				b.WriteString(`"x"`)
				continue
			case 2:
				idx = fmt.Sprint(r.IntN(n + 2)) // a duplicate, or out of range
			case 3:
				idx = `"1"`
			}
		}
		fmt.Fprintf(&b, `{"index": %s`, idx)
		switch r.IntN(6) {
		case 0:
			b.WriteString(`, "error": {"code": "invalid_request", "message": "input rejected"}`)
		case 1:
			b.WriteString(`, "profile": null`)
		default:
			fmt.Fprintf(&b, `, "profile": {"profile_url": "https://platform.example/in/p-%d", "name": "Zoë \"Z\" O'Brien %d", `+
				`"headline": "VP Sales \u00e9 \\/ team", "company": "Acme %d GmbH", "role": "VP Sales", "location": "Zürich", `+
				`"company_size": "%d", "industry": 7, "technographics": ["go", 1, "", "postgres"], "vendor_score": 0.93}`, i, i, i, 10+i)
			if r.IntN(2) == 0 {
				fmt.Fprintf(&b, `, "email": {"email": "p%d@acme.example", "confidence": 0.9, "verified": true}`, i)
			} else {
				b.WriteString(`, "email": {"email": null, "confidence": "high"}`)
			}
			if r.IntN(3) == 0 {
				b.WriteString(`, "phones": [{"number": "+14155550100", "type": "mobile", "country": "US"}, {"number": ""}, null]`)
			}
			if odd && r.IntN(8) == 0 {
				b.WriteString(`, "phones": 5`)
			}
		}
		b.WriteString(`}`)
	}
	b.WriteString(`]}`)
	return b.String()
}

// The one-pass decoder reads every answer as the reference (the decoder it
// replaced) did.
func TestDecodeBulkMatchesReference(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	bodies := []string{`{"results": []}`, `{"results": null}`, `{}`, `[]`, `{"results": [1, [], {}]}`,
		`{"results": [{"index": 0, "profile": {"profile_url": 5}}]}`, `{"results": [{"index": 0, "profile": "x"}]}`,
		`{"results": [{"index": 0, "profile": {"profile_url": "u", "name": "bad \ud800 surrogate"}}]}`}
	for range 200 {
		bodies = append(bodies, bulkAnswer(r, 1+r.IntN(30), r.IntN(2) == 0))
	}
	for _, body := range bodies {
		sameAsReference(t, []byte(body), 30)
	}
}

// sameAsReference fails t when decodeBulk reads body otherwise than the
// reference decoder does.
func sameAsReference(t *testing.T, body []byte, n int) {
	t.Helper()
	got, gerr := decodeBulk(body, n)
	want, werr := ref_decodeBulk(body, n)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("body %s: err %v, reference %v", body, gerr, werr)
	}
	for _, items := range [][]enrich.BulkItem{got, want} {
		for i := range items { // the messages may word a malformed part differently
			if items[i].Err != nil {
				e := *items[i].Err
				e.Message, e.Err = "", nil
				items[i].Err = &e
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("body %s\nrow %d: %+v (%+v)\nreference %+v (%+v)", body, i, got[i], got[i].Profile, want[i], want[i].Profile)
			}
		}
	}
}

// BenchmarkDecodeBulk decodes a bulk answer of 100 rows: the one-pass
// decoder against the reference it replaced (maps of raw fields, each field
// decoded again).
func BenchmarkDecodeBulk(b *testing.B) {
	body := []byte(bulkAnswer(rand.New(rand.NewPCG(3, 4)), enrich.MaxBulkRows, false))
	b.Run("one_pass", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeBulk(body, enrich.MaxBulkRows); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ref_decodeBulk(body, enrich.MaxBulkRows); err != nil {
				b.Fatal(err)
			}
		}
	})
}
