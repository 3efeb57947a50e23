package jobs

import (
	"slices"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// An erased row stands for its person by its own input (a company and role
// title too: that query found them) and by what was found for it; the keys
// are the cache's, so that the answers go and a later upload is recognised.
func TestPersonKeys(t *testing.T) {
	for _, c := range []struct {
		row                     store.ErasedRow
		wantCache, wantSuppress []string
	}{
		{store.ErasedRow{Kind: domain.InputEmail, Email: "Jane@Acme.example"},
			[]string{"email:jane@acme.example"}, []string{"email:jane@acme.example"}},
		{store.ErasedRow{Kind: domain.InputProfileURL, ProfileURL: "https://p.example/in/jane", FoundProfileURL: "https://p.example/in/jane",
			FoundEmail: "jane@acme.example", FoundName: "Jane  Doe", FoundComp: "Acme"},
			[]string{"url:https://p.example/in/jane", "url:https://p.example/in/jane", "email:jane@acme.example", "nc:jane doe|acme"},
			[]string{"url:https://p.example/in/jane", "url:https://p.example/in/jane", "email:jane@acme.example", "nc:jane doe|acme"}},
		{store.ErasedRow{Kind: domain.InputNameCompany, Name: "VP Sales", Company: "Acme", Role: "VP Sales", FoundProfileURL: "https://p.example/in/jane"},
			[]string{"nc:vp sales|acme", "url:https://p.example/in/jane"}, []string{"nc:vp sales|acme", "url:https://p.example/in/jane"}},
		{store.ErasedRow{Kind: domain.InputNameDomain, Name: "Jane Doe", Domain: "acme.example"},
			[]string{"nd:jane doe|acme.example"}, []string{"nd:jane doe|acme.example"}},
	} {
		cache, suppress := PersonKeys(c.row)
		if !slices.Equal(cache, c.wantCache) || !slices.Equal(suppress, c.wantSuppress) {
			t.Errorf("PersonKeys(%+v) = %q, %q; want %q, %q", c.row, cache, suppress, c.wantCache, c.wantSuppress)
		}
	}
}

// The hash is keyed: the same key gives the same hash, another key another.
func TestKeyedHash(t *testing.T) {
	a, b := KeyedHash([]byte("key one"), "email:jane@acme.example"), KeyedHash([]byte("key two"), "email:jane@acme.example")
	if len(a) != 32 || slices.Equal(a, b) || !slices.Equal(a, KeyedHash([]byte("key one"), "email:jane@acme.example")) {
		t.Fatalf("hashes %x %x", a, b)
	}
}
