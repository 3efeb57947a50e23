package jobs

import (
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/store"
)

// A domain lookup asks the vendor by name and domain only, and its cache key
// ignores the company name and the spelling of the role.
func TestDomainLookupKeyAndQuery(t *testing.T) {
	t.Parallel()
	r := store.Row{Kind: domain.InputNameDomain, Name: "VP  Sales", Company: "Acme GmbH", Domain: "acme.com"}
	if q := profileQuery(r); q != (enrich.ProfileQuery{Name: "VP  Sales", Domain: "acme.com"}) || q.Kind() != domain.InputNameDomain {
		t.Fatalf("query = %+v", q)
	}
	other := store.Row{Kind: domain.InputNameDomain, Name: "vp sales", Company: "ACME", Domain: "acme.com"}
	if k := cacheKey(domain.StageProfile, r); k != "nd:vp sales|acme.com" || k != cacheKey(domain.StageProfile, other) {
		t.Fatalf("keys %q and %q", k, cacheKey(domain.StageProfile, other))
	}
	byName := store.Row{Kind: domain.InputNameCompany, Name: "VP Sales", Company: "acme.com"}
	if cacheKey(domain.StageProfile, byName) == cacheKey(domain.StageProfile, r) {
		t.Fatal("a company named like a domain shares the domain lookup's key")
	}

	var d DistinctLookups
	for _, l := range []ingest.Lookup{
		{Kind: domain.InputNameDomain, Name: "VP Sales", Domain: "acme.com"},
		{Kind: domain.InputNameDomain, Name: "vp sales", Company: "Acme", Domain: "acme.com"},
		{Kind: domain.InputNameCompany, Name: "VP Sales", Company: "Acme"},
		{Kind: domain.InputEmail, Email: "jane@acme.com"},
		{Kind: domain.InputEmail, Email: "jane@acme.com"},
	} {
		d.Add(l)
	}
	if d.Len() != 3 || d.Len() != 3 {
		t.Fatalf("distinct = %d, want 3", d.Len())
	}
	// Counting again after more lookups.
	d.Add(ingest.Lookup{Kind: domain.InputEmail, Email: "jane@acme.com"})
	d.Add(ingest.Lookup{Kind: domain.InputEmail, Email: "joe@acme.com"})
	if d.Len() != 4 {
		t.Fatalf("distinct = %d, want 4", d.Len())
	}
}
