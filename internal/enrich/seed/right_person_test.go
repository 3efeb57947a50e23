package seed_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
)

// The seed keeps the rule for its lookups by name at a domain: a record
// of someone at another company is not delivered (the search is billed
// as it was), single or bulk; the same record by a company name is the
// seed's own search, delivered.
func TestSeedDomainLookupRightPerson(t *testing.T) {
	t.Parallel()
	record := func(company string) string {
		return fmt.Sprintf(`{"profile_url":"https://platform.example/in/jane","name":"Jane Doe","company":%q}`, company)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Credits-Charged", "2")
		if r.URL.Path == "/v1/bulk" {
			fmt.Fprintf(w, `{"results":[{"index":1,"profile":%s},{"index":0,"profile":%s}]}`, record("Acme Corp"), record("Initech"))
			return
		}
		fmt.Fprint(w, record("Initech"))
	}))
	t.Cleanup(srv.Close)
	s := vendor(t, srv.URL)
	profile := stages(domain.StageProfile)
	a, err := s.Ask(ctx(t), enrich.Question{Query: enrich.ProfileQuery{Name: "Jane Doe", Domain: "acme.com"}, Stages: profile}, "k1")
	if err != nil || a.Profile != nil || a.Charge.Credits != 2 || !a.WrongPerson {
		t.Fatalf("someone at Initech for acme.com: %+v, %v; want billed, not delivered, the wrong person", a, err)
	}
	a, err = s.Ask(ctx(t), enrich.Question{Query: enrich.ProfileQuery{Name: "Jane Doe", Company: "Acme"}, Stages: profile}, "k2")
	if err != nil || a.Profile == nil || !strings.Contains(a.Profile.Company, "Initech") || a.WrongPerson {
		t.Fatalf("by a company name: %+v, %v", a, err)
	}
	b, err := s.AskBulk(ctx(t), []enrich.Question{
		{Query: enrich.ProfileQuery{Name: "Jane Doe", Domain: "acme.com"}, Stages: profile},
		{Query: enrich.ProfileQuery{Name: "Jane Doe", Domain: "acme.com"}, Stages: profile},
	}, "k3")
	if err != nil || b.Items[0].Profile != nil || !b.Items[0].WrongPerson || b.Items[1].Profile == nil || b.Items[1].WrongPerson || b.Charge.Credits != 2 {
		t.Fatalf("bulk: %+v, %v", b, err)
	}
}
