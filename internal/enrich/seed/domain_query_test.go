package seed_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
)

// A domain lookup reaches the vendor as name and domain (single and bulk),
// and the fake answers it.
func TestDomainLookupAgainstFake(t *testing.T) {
	t.Parallel()
	v, _ := fake(t, nil)
	var mu sync.Mutex
	var queries []string
	spy := stub(t, func(w http.ResponseWriter, r *http.Request) { // the fake, recording each query string
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
		r2 := r.Clone(r.Context())
		r2.URL.Scheme, r2.URL.Host, r2.RequestURI = "", "", ""
		v.ServeHTTP(w, r2)
	})
	c := client(t, spy.URL, nil)

	var q enrich.ProfileQuery
	for i := 0; ; i++ {
		q = enrich.ProfileQuery{Name: "VP Sales", Domain: fmt.Sprintf("acme%d.com", i)}
		if v.ProfileHit(q) {
			break
		}
	}
	res, err := c.Profile(ctx(t), q, "k-nd")
	if err != nil {
		t.Fatal(err)
	}
	if len(queries) != 1 || queries[0] != "domain="+q.Domain+"&name=VP+Sales" {
		t.Fatalf("query strings %q, want domain and name only", queries)
	}
	if p := res.Profile; p == nil || p.Role != "VP Sales" || !strings.HasPrefix(p.ProfileURL, "https://platform.example/in/") {
		t.Fatalf("profile = %+v", res.Profile)
	}
	if res.Charge.Credits != 2 {
		t.Fatalf("charge = %d, want 2", res.Charge.Credits)
	}

	// The fake holds the contract: a domain that is not a bare host is refused.
	_, err = c.Profile(ctx(t), enrich.ProfileQuery{Name: "CTO", Domain: "https://www.acme.com/"}, "k-bad")
	if e := vendorError(t, err, enrich.ClassPermanent); e.Code != "invalid_domain" {
		t.Fatalf("code %q, want invalid_domain", e.Code)
	}

	rows := []enrich.ProfileQuery{q, {Name: "CTO", Domain: "initech.com"}, {Name: "CTO", Company: "Initech"}, {Name: "CTO", Domain: "Initech.COM"}}
	bres, err := c.Bulk(ctx(t), rows, []domain.Stage{domain.StageEmail}, "bulk-nd")
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range bres.Items[:3] {
		if it.Err != nil {
			t.Fatalf("row %d: %v", i, it.Err)
		}
		if (it.Profile != nil) != v.ProfileHit(rows[i]) {
			t.Fatalf("row %d: profile %+v, fake says hit=%v", i, it.Profile, v.ProfileHit(rows[i]))
		}
	}
	if bres.Items[0].Profile.ProfileURL != res.Profile.ProfileURL {
		t.Fatalf("bulk answered %s for the single lookup's %s", bres.Items[0].Profile.ProfileURL, res.Profile.ProfileURL)
	}
	if e := bres.Items[3].Err; e == nil || e.Code != "invalid_domain" {
		t.Fatalf("an upper-case domain in bulk: %+v, want invalid_domain", bres.Items[3])
	}
}
