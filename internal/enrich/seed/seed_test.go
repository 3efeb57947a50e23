package seed_test

import (
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/seed"
)

func vendor(t *testing.T, baseURL string) *seed.Vendor {
	t.Helper()
	return seed.New("acme", client(t, baseURL, nil), "")
}

func stages(s ...domain.Stage) []domain.Stage { return s }

// Ask goes to /v1/profile, /v1/email or /v1/phone by the question's stage,
// and answers as the client does.
func TestSeedAskByStage(t *testing.T) {
	t.Parallel()
	v, srv := fake(t, nil)
	s := vendor(t, srv.URL)
	if s.Name() != "acme" {
		t.Fatalf("name = %q", s.Name())
	}
	var u string
	for _, c := range urls(200, true, profileHit(v)) {
		if v.EmailHit(c) && v.PhoneHit(c) {
			u = c
			break
		}
	}
	if u == "" {
		t.Fatal("no URL the fake knows an email and a phone for")
	}
	q := enrich.ProfileQuery{ProfileURL: u}

	a, err := s.Ask(ctx(t), enrich.Question{Query: q, Stages: stages(domain.StageProfile)}, "k1")
	if err != nil || a.Profile == nil || a.Profile.ProfileURL != u || a.Email != nil || a.Phones != nil || a.Charge.Credits != 1 || !a.Found() {
		t.Fatalf("profile answer %+v, %v", a, err)
	}
	a, err = s.Ask(ctx(t), enrich.Question{Query: q, Stages: stages(domain.StageEmail)}, "k2")
	if err != nil || a.Email == nil || a.Profile != nil || a.Charge.Credits < 5 {
		t.Fatalf("email answer %+v, %v", a, err)
	}
	a, err = s.Ask(ctx(t), enrich.Question{Query: q, Stages: stages(domain.StagePhone)}, "k3")
	if err != nil || a.Phones == nil || a.Profile != nil || a.Charge.Credits < 5 {
		t.Fatalf("phone answer %+v, %v", a, err)
	}
	st := v.Stats()
	if st.ByEndpoint["profile"] != 1 || st.ByEndpoint["email"] != 1 || st.ByEndpoint["phone"] != 1 || st.Requests != 3 {
		t.Fatalf("the fake saw %+v", st.ByEndpoint)
	}
}

// Questions a single call cannot answer are refused before any call.
func TestSeedAskRefusesBeforeAnyCall(t *testing.T) {
	t.Parallel()
	v, srv := fake(t, nil)
	s := vendor(t, srv.URL)
	for name, q := range map[string]enrich.Question{
		"two stages":    {Query: enrich.ProfileQuery{ProfileURL: "https://platform.example/in/a"}, Stages: stages(domain.StageEmail, domain.StagePhone)},
		"no stage":      {Query: enrich.ProfileQuery{ProfileURL: "https://platform.example/in/a"}},
		"email by name": {Query: enrich.ProfileQuery{Name: "Jane Doe", Company: "Acme"}, Stages: stages(domain.StageEmail)},
		"unknown stage": {Query: enrich.ProfileQuery{ProfileURL: "https://platform.example/in/a"}, Stages: stages("fax")},
	} {
		_, err := s.Ask(ctx(t), q, "k")
		if e := vendorError(t, err, enrich.ClassPermanent); e.Status != 0 {
			t.Errorf("%s: %v", name, e)
		}
	}
	_, err := s.AskBulk(ctx(t), []enrich.Question{{Query: enrich.ProfileQuery{ProfileURL: "https://platform.example/in/a"}, Stages: stages(domain.StageEmail)}}, "b")
	if e := vendorError(t, err, enrich.ClassPermanent); e.Code != "invalid_include" {
		t.Fatalf("bulk without the profile stage: %v", e)
	}
	_, err = s.AskBulk(ctx(t), []enrich.Question{
		{Query: enrich.ProfileQuery{ProfileURL: "https://platform.example/in/a"}, Stages: stages(domain.StageProfile, domain.StageEmail)},
		{Query: enrich.ProfileQuery{ProfileURL: "https://platform.example/in/b"}, Stages: stages(domain.StageProfile)},
	}, "b2")
	if e := vendorError(t, err, enrich.ClassPermanent); e.Code != "mixed_stages" {
		t.Fatalf("mixed stages: %v", e)
	}
	if n := v.Stats().Requests; n != 0 {
		t.Fatalf("%d calls made for refused questions", n)
	}
}

// AskBulk is /v1/bulk with include: items answer their questions (paired by
// index) with their emails and phones, the charge is the fake's.
func TestSeedAskBulk(t *testing.T) {
	t.Parallel()
	v, srv := fake(t, nil)
	s := vendor(t, srv.URL)
	var qs []enrich.Question
	for _, u := range append(urls(20, true, profileHit(v)), urls(5, false, profileHit(v))...) {
		qs = append(qs, enrich.Question{Query: enrich.ProfileQuery{ProfileURL: u}, Stages: stages(domain.StageProfile, domain.StageEmail, domain.StagePhone)})
	}
	b, err := s.AskBulk(ctx(t), qs, "bulk")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Items) != len(qs) || !b.Charge.Reported || b.Charge.Credits != v.TotalCharged() {
		t.Fatalf("%d items, charge %+v, fake billed %d", len(b.Items), b.Charge, v.TotalCharged())
	}
	emails := 0
	for i, it := range b.Items {
		u := qs[i].Query.ProfileURL
		if (it.Profile != nil) != v.ProfileHit(qs[i].Query) || (it.Profile != nil && it.Profile.ProfileURL != u) {
			t.Fatalf("item %d: %+v for %s", i, it.Profile, u)
		}
		if it.Profile != nil && (it.Email != nil) != v.EmailHit(u) {
			t.Fatalf("item %d: email %+v, fake says %v", i, it.Email, v.EmailHit(u))
		}
		if it.Email != nil {
			emails++
		}
	}
	if emails == 0 || v.Stats().ByEndpoint["bulk"] != 1 {
		t.Fatalf("%d emails, calls %+v", emails, v.Stats().ByEndpoint)
	}
}

func TestSeedCapsAndPrice(t *testing.T) {
	t.Parallel()
	s := seed.New("vendor", client(t, "http://127.0.0.1:1", nil), domain.HonoursKeysFalse)
	c := s.Caps()
	if !c.RoleSearch || c.FillsAll || c.MaxBulk != enrich.MaxBulkRows || c.Billing.BlocksAtZero || c.Billing.HonoursKeys != domain.HonoursKeysFalse ||
		c.Billing.ChargeHeader != "X-Credits-Charged" || c.Billing.Rule(domain.StageProfile) != enrich.BillPerCall || c.Billing.Rule(domain.StageEmail) != enrich.BillPerField {
		t.Fatalf("caps = %+v", c)
	}
	if !c.Answers(domain.StageProfile, domain.InputNameDomain, true) || c.Answers(domain.StageEmail, domain.InputNameCompany, false) ||
		!c.Answers(domain.StagePhone, domain.InputProfileURL, false) {
		t.Fatal("Answers disagrees with Inputs")
	}
	byName := enrich.ProfileQuery{Name: "CTO", Company: "Acme"}
	byURL := enrich.ProfileQuery{ProfileURL: "https://platform.example/in/a"}
	for _, tc := range []struct {
		q    enrich.Question
		want enrich.Price
	}{
		{enrich.Question{Query: byName, Stages: stages(domain.StageProfile)}, enrich.Price{Miss: 2, Hit: 2, Worst: 2}},
		{enrich.Question{Query: byURL, Stages: stages(domain.StageEmail)}, enrich.Price{Miss: 0, Hit: 5, Worst: 10}},
		{enrich.Question{Query: byURL, Stages: stages(domain.StagePhone)}, enrich.Price{Miss: 0, Hit: 5, Worst: 25}},
		{enrich.Question{Query: byURL, Stages: stages(domain.StageProfile, domain.StageEmail, domain.StagePhone)}, enrich.Price{Miss: 1, Hit: 1, Worst: 36}},
	} {
		if got := s.Price(tc.q); got != tc.want {
			t.Errorf("Price(%v) = %+v, want %+v", tc.q.Stages, got, tc.want)
		}
	}
}

func TestOutOfCreditsStopsKey(t *testing.T) {
	t.Parallel()
	e := &enrich.Error{Class: enrich.ClassOutOfCredits, Status: 402}
	if !e.StopsKey() || e.Retryable() || enrich.ClassOutOfCredits.String() != "out_of_credits" {
		t.Fatalf("402: stops %v, retryable %v, %s", e.StopsKey(), e.Retryable(), e.Class)
	}
	for _, c := range []enrich.Class{enrich.ClassUnauthorized, enrich.ClassForbidden} {
		if !(&enrich.Error{Class: c}).StopsKey() {
			t.Errorf("%s does not stop the key", c)
		}
	}
}
