package hunter_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/hunter"
)

// A finder that answers the lookups it does not know with a namesake's
// address at another company is paid for those (the contract bills a found
// email) and delivers none of them; every address it delivers is at the
// domain asked, and the charges equal the fake's bill.
func TestFinderDeliversNoAddressAtAnotherCompany(t *testing.T) {
	opts := enrichtest.DefaultHunterOptions()
	opts.HitRate, opts.WrongDomainRate = 0.5, 0.6
	v, fake, _ := newPair(t, opts, hunter.Config{})
	const n = 300
	var delivered, wrong, charged int64
	for i := range n {
		dom := fmt.Sprintf("company%d.example", i%40)
		a, err := v.Ask(context.Background(), emailQ(fmt.Sprintf("Person%d Surname%d", i, i), dom), "")
		if err != nil {
			t.Fatal(err)
		}
		charged += a.Charge.Credits
		switch {
		case a.WrongPerson:
			wrong++
			if a.Email != nil {
				t.Fatalf("row %d: marked the wrong person, and delivered %s", i, a.Email.Address)
			}
		case a.Email != nil:
			delivered++
			if !strings.HasSuffix(a.Email.Address, "@"+dom) {
				t.Fatalf("row %d: delivered %s for %s", i, a.Email.Address, dom)
			}
		}
	}
	st := fake.Stats()
	if st.Wrong == 0 || wrong != st.Wrong || delivered != st.Found-st.Wrong {
		t.Fatalf("the fake answered %d wrong of %d found; the adapter marked %d wrong and delivered %d", st.Wrong, st.Found, wrong, delivered)
	}
	if u := fake.Usage(key); charged != u.Searches {
		t.Fatalf("charged %d credits, the fake billed %d searches", charged, u.Searches)
	}
	t.Logf("%d lookups: %d delivered, %d namesakes at another company paid for and not delivered", n, delivered, wrong)
}

// The rule of the right person, by what the finder answered.
func TestFinderRightPerson(t *testing.T) {
	for _, c := range []struct {
		name             string
		domain, company  string // asked
		email, vendorCo  string // answered
		wantEmail, wrong bool
		malformed        bool
	}{
		{name: "at the domain asked", domain: "acme.com", email: "ada.lovelace@acme.com", wantEmail: true},
		{name: "at a subdomain", domain: "acme.com", email: "ada@eu.acme.com", wantEmail: true},
		{name: "a website asked", domain: "https://www.acme.com/about", email: "ada@acme.com", wantEmail: true},
		{name: "at another domain", domain: "acme.com", email: "ada.lovelace@globex.com", vendorCo: "Acme", wrong: true},
		{name: "a look-alike domain", domain: "acme.com", email: "ada@notacme.com", wrong: true},
		{name: "webmail for a domain", domain: "acme.com", email: "ada.lovelace@gmail.com", wrong: true},
		{name: "a company: its domain", company: "Acme Inc", email: "ada@acme.com", wantEmail: true},
		{name: "a company: named by the vendor", company: "International Widgets", email: "ada@iw.example", vendorCo: "International Widgets Ltd", wantEmail: true},
		{name: "a company: someone else's", company: "Acme", email: "ada@globex.com", vendorCo: "Globex", wrong: true},
		{name: "not an address", domain: "acme.com", email: "ada lovelace at acme", malformed: true},
		{name: "two addresses", domain: "acme.com", email: "ada@acme.com, bob@acme.com", malformed: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, `{"data": {"first_name": "Ada", "last_name": "Lovelace", "email": %q, "score": 90, "company": %q}}`, c.email, c.vendorCo)
			}))
			defer srv.Close()
			v, err := hunter.New(hunter.Config{BaseURL: srv.URL, APIKey: key})
			if err != nil {
				t.Fatal(err)
			}
			q := enrich.Question{Stages: []domain.Stage{domain.StageEmail}, Query: enrich.ProfileQuery{Name: "Ada Lovelace", Domain: c.domain, Company: c.company}}
			a, err := v.Ask(context.Background(), q, "")
			if c.malformed {
				if e, ok := enrich.AsError(err); !ok || e.Code != "malformed_response" || !e.OutcomeUnknown {
					t.Fatalf("want a malformed answer, got %+v, %v", a, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (a.Email != nil) != c.wantEmail || a.WrongPerson != c.wrong {
				t.Fatalf("email %+v, wrong person %v; want an email %v, wrong person %v", a.Email, a.WrongPerson, c.wantEmail, c.wrong)
			}
			if a.Charge.Credits != 1 {
				t.Fatalf("charge %+v: a found email is billed one search, the right person's or not", a.Charge)
			}
		})
	}
}
