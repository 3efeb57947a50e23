package pdl_test

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/pdl"
)

const testKey = "pdl_live_s3cr3t-key-0123"

var now = time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)

func clock() time.Time { return now }

// fake starts the PDL fake with the default options changed by mutate.
func fake(t *testing.T, mutate func(*enrichtest.PDLOptions)) (*enrichtest.PDL, *httptest.Server) {
	t.Helper()
	o := enrichtest.DefaultPDLOptions()
	o.APIKeys = []string{testKey}
	o.Now = clock
	if mutate != nil {
		mutate(&o)
	}
	p := enrichtest.NewPDL(o)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv
}

// stub starts a vendor answering with h.
func stub(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func adapter(t *testing.T, baseURL string, mutate func(*pdl.Config)) *pdl.Vendor {
	t.Helper()
	cfg := pdl.Config{BaseURL: baseURL, APIKey: testKey, Now: clock}
	if mutate != nil {
		mutate(&cfg)
	}
	v, err := pdl.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return v
}

// vendorError asserts err is an *enrich.Error of class want without the key in its text.
func vendorError(t *testing.T, err error, want enrich.Class) *enrich.Error {
	t.Helper()
	e, ok := enrich.AsError(err)
	if !ok {
		t.Fatalf("err = %v (%T), want *enrich.Error", err, err)
	}
	if e.Class != want {
		t.Fatalf("class = %s, want %s (%v)", e.Class, want, e)
	}
	if strings.Contains(e.Error(), testKey) {
		t.Fatalf("error text holds the API key: %v", e)
	}
	return e
}

var all = []domain.Stage{domain.StageProfile, domain.StageEmail, domain.StagePhone}

func question(l enrichtest.Lookup) enrich.Question {
	q := enrich.ProfileQuery{ProfileURL: l.Profile, Email: l.Email, Name: l.Name}
	if strings.Contains(l.Company, ".") {
		q.Domain = l.Company
	} else {
		q.Company = l.Company
	}
	return enrich.Question{Query: q, Stages: all}
}

// lookups returns n lookups by name at a domain that the fake knows (or not)
// and, when full, whose record has a profile URL, a work email and a mobile.
func lookups(p *enrichtest.PDL, n int, known bool) []enrichtest.Lookup {
	var out []enrichtest.Lookup
	for i := 0; len(out) < n; i++ {
		l := enrichtest.Lookup{Name: fmt.Sprintf("Person %d", i), Company: fmt.Sprintf("firm%d.com", i)}
		if p.Knows(l) == known {
			out = append(out, l)
		}
	}
	return out
}

// One match answers the profile, the email and the phones, for one credit,
// the profile URL canonical and Raw the record's data exactly.
func TestMatchFillsEveryStage(t *testing.T) {
	t.Parallel()
	p, srv := fake(t, func(o *enrichtest.PDLOptions) { o.WorkEmailRate, o.MobileRate, o.NoProfileRate = 1, 1, 0 })
	v := adapter(t, srv.URL, nil)
	l := lookups(p, 1, true)[0]
	a, err := v.Ask(t.Context(), enrich.Question{Query: question(l).Query, Stages: []domain.Stage{domain.StageProfile}}, "ignored")
	if err != nil {
		t.Fatal(err)
	}
	if a.Profile == nil || !strings.HasPrefix(a.Profile.ProfileURL, "https://platform.example/in/person-") || a.Profile.Name != strings.ToLower(l.Name) ||
		a.Profile.Company == "" || a.Profile.Role == "" || a.Profile.CompanySize == "" || a.Profile.Industry == "" {
		t.Fatalf("profile = %+v", a.Profile)
	}
	if a.Email == nil || !strings.HasSuffix(a.Email.Address, "@"+l.Company) || a.Email.Confidence <= 0 || a.Email.Confidence > 1 || a.Email.Verified {
		t.Fatalf("email = %+v", a.Email)
	}
	if a.Phones == nil || !a.Phones.HasMobile() || a.Phones.Numbers[0].Type != "mobile" {
		t.Fatalf("phones = %+v", a.Phones)
	}
	want := enrich.Charge{Credits: 1, Reported: true, Remaining: 1_000_000 - 1, RemainingReported: true, Estimate: 1}
	if a.Charge.Overage == nil || *a.Charge.Overage != (enrich.Overage{PurchasedRemaining: 1_000_000 - 1}) || a.Charge.Overage.InOverage() {
		t.Fatalf("overage %+v", a.Charge.Overage)
	}
	if a.Charge.Overage = nil; a.Charge != want || p.Billed(testKey) != 1 {
		t.Fatalf("charge %+v, want %+v; the fake billed %d", a.Charge, want, p.Billed(testKey))
	}
	// Raw: the profile's is the record's data as sent; the email's and the
	// phones' read back through enrich's parsers as they were decoded.
	var data map[string]json.RawMessage
	if err := json.Unmarshal(a.Profile.Raw, &data); err != nil || data["skills"] == nil || !strings.HasPrefix(string(data["linkedin_url"]), `"platform.example/`) {
		t.Fatalf("profile Raw is not the record's data: %s", a.Profile.Raw)
	}
	if back, err := pdl.ParseProfileRaw(a.Profile.Raw); err != nil || fmt.Sprint(*back) != fmt.Sprint(*a.Profile) {
		t.Fatalf("ParseProfileRaw = %+v, %v; want %+v", back, err, a.Profile)
	}
	if back, err := enrich.ParseEmailRaw(a.Email.Raw); err != nil || fmt.Sprint(*back) != fmt.Sprint(*a.Email) {
		t.Fatalf("ParseEmailRaw = %+v, %v; want %+v", back, err, a.Email)
	}
	if back, err := enrich.ParsePhonesRaw(a.Phones.Raw); err != nil || fmt.Sprint(*back) != fmt.Sprint(*a.Phones) {
		t.Fatalf("ParsePhonesRaw = %+v, %v; want %+v", back, err, a.Phones)
	}
}

// A 404 is a no-match, free; its answer holds nothing.
func TestNoMatchFree(t *testing.T) {
	t.Parallel()
	p, srv := fake(t, nil)
	v := adapter(t, srv.URL, nil)
	a, err := v.Ask(t.Context(), question(lookups(p, 1, false)[0]), "")
	if err != nil || a.Found() || a.Charge.Credits != 0 || a.Charge.Reported || p.TotalBilled() != 0 {
		t.Fatalf("answer %+v, %v; billed %d", a, err, p.TotalBilled())
	}
}

// A bulk answered out of order pairs by metadata; 404 items are no-matches,
// free; the call's charge is the fake's bill.
func TestBulkPairsByMetadataAgainstFake(t *testing.T) {
	t.Parallel()
	p, srv := fake(t, func(o *enrichtest.PDLOptions) { o.NoProfileRate = 0 })
	v := adapter(t, srv.URL, nil)
	known, unknown := lookups(p, 25, true), lookups(p, 25, false)
	var qs []enrich.Question
	for i := range 25 {
		qs = append(qs, question(known[i]), question(unknown[i]))
	}
	b, err := v.AskBulk(t.Context(), qs, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Items) != 50 || !b.Charge.Reported || b.Charge.Credits != 25 || p.TotalBilled() != 25 || b.Charge.Estimate != 25 {
		t.Fatalf("%d items, charge %+v, the fake billed %d", len(b.Items), b.Charge, p.TotalBilled())
	}
	for i, it := range b.Items {
		if it.Err != nil {
			t.Fatalf("item %d: %v", i, it.Err)
		}
		if i%2 == 1 {
			if it.Profile != nil || it.Email != nil || it.Phones != nil || it.EstimatedCredits != 0 {
				t.Fatalf("item %d (unknown person): %+v", i, it)
			}
			continue
		}
		// The fake names the person after the lookup: the item is the question's.
		l := known[i/2]
		if it.Profile == nil || it.Profile.Name != strings.ToLower(l.Name) || it.EstimatedCredits != 1 {
			t.Fatalf("item %d answers %+v, want %s", i, it.Profile, l.Name)
		}
	}
}

// Against a handler: the request's method, headers and body; items come
// reversed, one missing, one twice, one with metadata of another call.
func TestBulkPairsByMetadataNeverPosition(t *testing.T) {
	t.Parallel()
	srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v5/person/bulk" || r.Header.Get("X-Api-Key") != testKey ||
			r.Header.Get("Authorization") != "" || r.Header.Get("Idempotency-Key") != "" || r.Header.Get("Content-Type") != "application/json" ||
			r.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("request %s %s %v", r.Method, r.URL, r.Header)
		}
		var body struct {
			Requests []struct {
				Params   map[string]any  `json:"params"`
				Metadata json.RawMessage `json:"metadata"`
			} `json:"requests"`
		}
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			t.Errorf("the body is not gzipped: %v", err)
			return
		}
		if err := json.NewDecoder(zr).Decode(&body); err != nil || len(body.Requests) != 5 {
			t.Errorf("body: %v, %d requests", err, len(body.Requests))
		}
		// min_likelihood a number, metadata a string, as PDL's clients send them.
		if p := body.Requests[0].Params; p["profile"] != "https://platform.example/in/a" || p["min_likelihood"] != 6.0 || p["required"] != "work_email" {
			t.Errorf("params of request 0: %v", p)
		}
		if p := body.Requests[2].Params; p["min_likelihood"] != 9.0 {
			t.Errorf("the floor of a name at a domain: %v", p)
		}
		if md := string(body.Requests[1].Metadata); md != `{"enrichq_item":"1"}` {
			t.Errorf("metadata %s: want a string", md)
		}
		if p := body.Requests[2].Params; p["name"] != "Jane Doe" || p["company"] != "acme.de" {
			t.Errorf("params of request 2: %v", p)
		}
		item := func(j int, found bool) string {
			md := string(body.Requests[j].Metadata)
			if !found {
				return `{"status":404,"error":{"type":"not_found","message":"none"},"metadata":` + md + `}`
			}
			return fmt.Sprintf(`{"status":200,"likelihood":8,"data":{"full_name":"p%d","linkedin_url":"platform.example/in/p%d"},"metadata":%s}`, j, j, md)
		}
		// Request 1 missing, request 3 twice, request 4 a 404, plus an item for a request never sent.
		w.Header().Set("X-Call-Credits-Spent", "3")
		fmt.Fprintf(w, "[%s,%s,%s,%s,%s,%s]", item(4, false), item(3, true), item(3, true), item(2, true), item(0, true),
			`{"status":200,"data":{},"metadata":{"enrichq_item":99}}`)
	})
	v := adapter(t, srv.URL, func(c *pdl.Config) {
		c.MinLikelihood = map[domain.InputKind]int{domain.InputProfileURL: 6, domain.InputNameDomain: 9}
		c.Required = map[domain.Stage]string{domain.StageProfile: "work_email", domain.StageEmail: "work_email", domain.StagePhone: "work_email"}
	})
	qs := []enrich.Question{
		{Query: enrich.ProfileQuery{ProfileURL: "https://platform.example/in/a"}, Stages: all},
		{Query: enrich.ProfileQuery{Email: "b@acme.com"}, Stages: all},
		{Query: enrich.ProfileQuery{Name: "Jane Doe", Domain: "acme.de"}, Stages: all},
		{Query: enrich.ProfileQuery{Name: "John Roe", Company: "Acme"}, Stages: all},
		{Query: enrich.ProfileQuery{Email: "e@acme.com"}, Stages: all},
	}
	b, err := v.AskBulk(t.Context(), qs, "")
	if err != nil {
		t.Fatal(err)
	}
	if p := b.Items[0].Profile; p == nil || p.ProfileURL != "https://platform.example/in/p0" || b.Items[0].EstimatedCredits != 1 {
		t.Fatalf("item 0: %+v", b.Items[0])
	}
	if p := b.Items[2].Profile; p == nil || p.ProfileURL != "https://platform.example/in/p2" {
		t.Fatalf("item 2: %+v", b.Items[2])
	}
	for _, i := range []int{1, 3} {
		e := b.Items[i].Err
		if e == nil || e.Class != enrich.ClassTransient || !e.OutcomeUnknown || b.Items[i].EstimatedCredits != 1 {
			t.Fatalf("item %d (missing or duplicated): %+v", i, b.Items[i])
		}
	}
	if it := b.Items[4]; it.Err != nil || it.Profile != nil || it.EstimatedCredits != 0 {
		t.Fatalf("item 4 (404): %+v", it)
	}
	if b.Charge.Credits != 3 || !b.Charge.Reported || b.Charge.Estimate != 4 {
		t.Fatalf("charge %+v", b.Charge)
	}
}

// 402: out of credits, for the whole call, nothing billed and nothing to count.
func TestOutOfCredits(t *testing.T) {
	t.Parallel()
	p, srv := fake(t, func(o *enrichtest.PDLOptions) { o.Credits = map[string]int64{testKey: 0} })
	v := adapter(t, srv.URL, nil)
	_, err := v.Ask(t.Context(), question(lookups(p, 1, true)[0]), "")
	e := vendorError(t, err, enrich.ClassOutOfCredits)
	if !e.StopsKey() || e.Retryable() || e.OutcomeUnknown || e.Charge != nil || e.Status != 402 || e.Code != "payment_required" {
		t.Fatalf("402: %+v", e)
	}
	_, err = v.AskBulk(t.Context(), []enrich.Question{question(lookups(p, 1, true)[0])}, "")
	if e := vendorError(t, err, enrich.ClassOutOfCredits); e.OutcomeUnknown {
		t.Fatalf("bulk 402: %+v", e)
	}
	if p.TotalBilled() != 0 || len(p.Ledger()) != 0 {
		t.Fatalf("the fake billed %d: %+v", p.TotalBilled(), p.Ledger())
	}
}

// 429: RetryAfter runs to X-RateLimit-Reset, read against the injected clock.
func TestRateLimitedUntilWindowEnd(t *testing.T) {
	t.Parallel()
	p, srv := fake(t, func(o *enrichtest.PDLOptions) { o.RPM = 1 })
	v := adapter(t, srv.URL, nil)
	l := lookups(p, 1, false)[0]
	a, err := v.Ask(t.Context(), question(l), "")
	if err != nil || a.RateLimit == nil || a.RateLimit.Remaining != 0 || a.RateLimit.Limit != 1 || a.RateLimit.ResetIn != 30 {
		t.Fatalf("first call: %+v, %v", a.RateLimit, err)
	}
	_, err = v.Ask(t.Context(), question(l), "")
	if e := vendorError(t, err, enrich.ClassRateLimited); e.RetryAfter != 30*time.Second || e.OutcomeUnknown || e.Code != "rate_limit_error" {
		t.Fatalf("429: %+v", e)
	}
	for _, reset := range []string{"2026-03-01T12:00:47Z", "2026-03-01 12:00:47", "Sun, 01 Mar 2026 12:00:47 GMT", fmt.Sprint(now.Add(17 * time.Second).Unix())} {
		srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-RateLimit-Reset", reset)
			w.WriteHeader(429)
			fmt.Fprint(w, `{"status":429,"error":{"type":"rate_limit_error","message":"slow down"}}`)
		})
		_, err := adapter(t, srv.URL, nil).Ask(t.Context(), question(l), "")
		if e := vendorError(t, err, enrich.ClassRateLimited); e.RetryAfter != 17*time.Second {
			t.Errorf("reset %q: retry after %s, want 17s", reset, e.RetryAfter)
		}
	}
}

// A 200 that does not parse is of unknown outcome, billed as the header says.
func TestMalformed200OutcomeUnknown(t *testing.T) {
	t.Parallel()
	p, srv := fake(t, func(o *enrichtest.PDLOptions) { o.MalformedRate = 1 })
	v := adapter(t, srv.URL, nil)
	_, err := v.Ask(t.Context(), question(lookups(p, 1, true)[0]), "")
	e := vendorError(t, err, enrich.ClassTransient)
	if !e.OutcomeUnknown || e.Code != "malformed_response" || e.Charge == nil || e.Charge.Credits != 1 || p.TotalBilled() != 1 {
		t.Fatalf("malformed single: %+v (charge %+v), billed %d", e, e.Charge, p.TotalBilled())
	}
	_, err = v.AskBulk(t.Context(), []enrich.Question{question(lookups(p, 1, true)[0])}, "")
	if e := vendorError(t, err, enrich.ClassTransient); !e.OutcomeUnknown {
		t.Fatalf("malformed bulk: %+v", e)
	}
	for _, body := range []string{`{"status":200,"likelihood":5}`, `{"status":200,"data":"jane"}`, `[]`, ``} {
		srv := stub(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) })
		_, err := adapter(t, srv.URL, nil).Ask(t.Context(), question(lookups(p, 1, true)[0]), "")
		if e := vendorError(t, err, enrich.ClassTransient); !e.OutcomeUnknown || e.Charge != nil {
			t.Errorf("200 %q: %+v", body, e)
		}
	}
}

// linkedin_url comes without a scheme (and in any case, with www. and a
// trailing slash): it is kept in the canonical form of an upload's URLs.
// A record without a usable one has no profile, but keeps its email.
func TestProfileURLNormalised(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"platform.example/in/jane-doe":              "https://platform.example/in/jane-doe",
		"www.Platform.Example/in/jane-doe/":         "https://platform.example/in/jane-doe",
		"http://platform.example/in/jane-doe?x=1":   "https://platform.example/in/jane-doe",
		"https://www.platform.example:443/in/jane/": "https://platform.example/in/jane",
		"platform.example":                          "",
		"":                                          "",
	} {
		data := fmt.Sprintf(`{"full_name":"jane doe","linkedin_url":%q,"work_email":"jane@acme.com","job_company_website":"acme.com"}`, in)
		srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"status":200,"likelihood":7,"data":%s}`, data)
		})
		a, err := adapter(t, srv.URL, nil).Ask(t.Context(), enrich.Question{Query: enrich.ProfileQuery{Email: "jane@acme.com"}, Stages: all}, "")
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case want == "" && a.Profile != nil:
			t.Errorf("%q: a profile %q", in, a.Profile.ProfileURL)
		case want != "" && (a.Profile == nil || a.Profile.ProfileURL != want || string(a.Profile.Raw) != data):
			t.Errorf("%q: profile %+v, want %s", in, a.Profile, want)
		case a.Email == nil || a.Email.Address != "jane@acme.com" || a.Email.Confidence != 0.7:
			t.Errorf("%q: email %+v", in, a.Email)
		}
	}
}

// The email is the work email, else the first personal one; the phones the
// mobile, then the others (once each); nulls and odd types are no data.
func TestRecordMapping(t *testing.T) {
	t.Parallel()
	srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":200,"likelihood":"high","data":{"linkedin_url":"platform.example/in/x","full_name":null,"job_title":"cto",
			"job_company_name":"acme","job_company_size":"51-200","job_company_industry":"retail","location_name":"berlin, germany",
			"work_email":null,"personal_emails":[" ", "x@mail.example","y@mail.example"],"mobile_phone":"+4915100","phone_numbers":["+4915100","+4930200",7]}}`)
	})
	a, err := adapter(t, srv.URL, nil).Ask(t.Context(), enrich.Question{Query: enrich.ProfileQuery{ProfileURL: "https://platform.example/in/x"}, Stages: all}, "")
	if err != nil {
		t.Fatal(err)
	}
	if p := a.Profile; p.Name != "" || p.Role != "cto" || p.Company != "acme" || p.CompanySize != "51-200" || p.Industry != "retail" || p.Location != "berlin, germany" {
		t.Fatalf("profile %+v", p)
	}
	if a.Email == nil || a.Email.Address != "x@mail.example" || a.Email.Confidence != 0 {
		t.Fatalf("email %+v", a.Email)
	}
	if ph := a.Phones; ph == nil || len(ph.Numbers) != 2 || ph.Numbers[0] != (enrich.Phone{Number: "+4915100", Type: "mobile"}) || ph.Numbers[1].Number != "+4930200" {
		t.Fatalf("phones %+v", a.Phones)
	}
}

// A role title is not an identity at this vendor: refused before any call.
func TestRoleQuestionRefusedBeforeAnyCall(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := stub(t, func(w http.ResponseWriter, r *http.Request) { calls.Add(1) })
	v := adapter(t, srv.URL, nil)
	if v.Caps().RoleSearch || v.Caps().Answers(domain.StageProfile, domain.InputNameCompany, true) {
		t.Fatal("caps claim role search")
	}
	role := enrich.Question{Query: enrich.ProfileQuery{Name: "VP Sales", Company: "Acme"}, Stages: all, Role: true}
	_, err := v.Ask(t.Context(), role, "")
	if e := vendorError(t, err, enrich.ClassPermanent); e.Code != "role_search_unsupported" || e.Status != 0 {
		t.Fatalf("role: %+v", e)
	}
	if p := v.Price(role); p != (enrich.Price{}) {
		t.Fatalf("a refused question is priced %+v", p)
	}
	if m := v.MaxCharge(role); m != 0 {
		t.Fatalf("a refused question may cost %d by the contract, want 0", m)
	}
	person := enrich.Question{Query: enrich.ProfileQuery{Name: "Jane Doe", Company: "Acme"}, Stages: all}
	if m := v.MaxCharge(person); m != pdl.CreditsPerMatch {
		t.Fatalf("a match may cost %d by the contract, want %d whatever it holds", m, pdl.CreditsPerMatch)
	}
	b, err := v.AskBulk(t.Context(), []enrich.Question{role, {Query: enrich.ProfileQuery{Name: "Jane"}, Stages: all}}, "")
	if err != nil || b.Items[0].Err == nil || b.Items[0].Err.Code != "role_search_unsupported" || b.Items[1].Err == nil || b.Items[1].Err.Code != "invalid_query" {
		t.Fatalf("bulk of refused questions: %+v, %v", b, err)
	}
	_, err = v.AskBulk(t.Context(), make([]enrich.Question, pdl.DefaultBatchSize+1), "")
	if e := vendorError(t, err, enrich.ClassPermanent); e.Code != "too_many_rows" {
		t.Fatalf("81 questions: %+v", e)
	}
	if calls.Load() != 0 {
		t.Fatalf("%d calls made", calls.Load())
	}
}

// The single call's request: GET, X-Api-Key, the params with the default
// floor of a name at a company and the email stage's required, no Bearer
// token and no Idempotency-Key (the vendor takes none).
func TestSingleRequestShape(t *testing.T) {
	t.Parallel()
	srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.Method != http.MethodGet || r.URL.Path != "/base/v5/person/enrich" || r.Header.Get("X-Api-Key") != testKey ||
			r.Header.Get("Authorization") != "" || r.Header.Get("Idempotency-Key") != "" ||
			q.Get("name") != "Jane Doe" || q.Get("company") != "Acme GmbH" || q.Get("min_likelihood") != "6" || q.Get("required") != "work_email OR personal_emails" || len(q) != 4 {
			t.Errorf("request %s %s %v", r.Method, r.URL, r.Header)
		}
		w.WriteHeader(404)
	})
	v := adapter(t, srv.URL+"/base/v5/", nil)
	if _, err := v.Ask(t.Context(), enrich.Question{Query: enrich.ProfileQuery{Name: "Jane Doe", Company: "Acme GmbH"}, Stages: []domain.Stage{domain.StageEmail}}, "idem-1"); err != nil {
		t.Fatal(err)
	}
}

// Each status in its class; only a 5xx other than 503 may have been billed.
func TestClassification(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status  int
		class   enrich.Class
		unknown bool
	}{
		{400, enrich.ClassPermanent, false},
		{401, enrich.ClassUnauthorized, false},
		{402, enrich.ClassOutOfCredits, false},
		{403, enrich.ClassForbidden, false},
		{405, enrich.ClassPermanent, false},
		{429, enrich.ClassRateLimited, false},
		{500, enrich.ClassTransient, true},
		{502, enrich.ClassTransient, true},
		{503, enrich.ClassTransient, false},
	} {
		var calls atomic.Int32
		srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.WriteHeader(tc.status)
			fmt.Fprintf(w, `{"status":%d,"error":{"type":"t%d","message":"m"}}`, tc.status, tc.status)
		})
		_, err := adapter(t, srv.URL, nil).AskBulk(t.Context(), []enrich.Question{{Query: enrich.ProfileQuery{Email: "a@b.co"}, Stages: all}}, "")
		if e := vendorError(t, err, tc.class); e.OutcomeUnknown != tc.unknown || e.Status != tc.status || e.Code != fmt.Sprintf("t%d", tc.status) || e.Endpoint != "person_bulk" {
			t.Errorf("%d: %+v", tc.status, e)
		}
		if calls.Load() != 1 { // never a retry
			t.Errorf("%d: %d calls", tc.status, calls.Load())
		}
	}
	// A 404 of the bulk path is not a no-match: the endpoint is not there.
	srv := stub(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) })
	_, err := adapter(t, srv.URL, nil).AskBulk(t.Context(), []enrich.Question{{Query: enrich.ProfileQuery{Email: "a@b.co"}, Stages: all}}, "")
	vendorError(t, err, enrich.ClassPermanent)
}

// The key is never in an error's text, even when the vendor echoes it, nor
// in the configuration's or the adapter's printed forms.
func TestAPIKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 402, 500} {
		srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"status":%d,"error":{"type":"bad key %s","message":"key %s is wrong"}}`, status, r.Header.Get("X-Api-Key"), r.Header.Get("X-Api-Key"))
		})
		_, err := adapter(t, srv.URL, nil).Ask(t.Context(), enrich.Question{Query: enrich.ProfileQuery{Email: "a@b.co"}, Stages: all}, "")
		if err == nil || strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "[REDACTED]") {
			t.Errorf("%d: %v", status, err)
		}
	}
	srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `[{"status":400,"error":{"type":"invalid_request_error","message":"key %s"},"metadata":{"enrichq_item":0}}]`, r.Header.Get("X-Api-Key"))
	})
	b, err := adapter(t, srv.URL, nil).AskBulk(t.Context(), []enrich.Question{{Query: enrich.ProfileQuery{Email: "a@b.co"}, Stages: all}}, "")
	if err != nil || b.Items[0].Err == nil || b.Items[0].Err.Class != enrich.ClassPermanent || strings.Contains(b.Items[0].Err.Error(), testKey) {
		t.Fatalf("item error: %+v, %v", b.Items[0].Err, err)
	}
	cfg := pdl.Config{BaseURL: "http://127.0.0.1:1", APIKey: testKey}
	v := adapter(t, cfg.BaseURL, nil)
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%v %#v", v, v)} {
		if strings.Contains(s, testKey) {
			t.Errorf("printed: %s", s)
		}
	}
	// A transport error (nothing listens) names neither the key nor the URL's query.
	_, err = v.Ask(t.Context(), enrich.Question{Query: enrich.ProfileQuery{Email: "private@b.co"}, Stages: all}, "")
	if e := vendorError(t, err, enrich.ClassTransient); strings.Contains(e.Error(), "private@b.co") {
		t.Fatalf("transport error shows the input: %v", e)
	}
}

func TestCapsAndConfig(t *testing.T) {
	t.Parallel()
	v := adapter(t, "https://api.pdl.example", func(c *pdl.Config) { c.Name, c.BatchSize = "people", 50 })
	c := v.Caps()
	if v.Name() != "people" || !c.FillsAll || c.MaxBulk != 50 || !c.Billing.BlocksAtZero || c.Billing.HonoursKeys != domain.HonoursKeysFalse ||
		c.Billing.Rule(domain.StageEmail) != enrich.BillPerMatch || c.Billing.ChargeHeader != "X-Call-Credits-Spent" ||
		c.Billing.BalanceHeader != "X-TotalLimit-Remaining" || !c.Answers(domain.StageEmail, domain.InputNameDomain, false) {
		t.Fatalf("caps %+v", c)
	}
	if p := v.Price(enrich.Question{Query: enrich.ProfileQuery{Email: "a@b.co"}, Stages: all}); p != (enrich.Price{Miss: 0, Hit: 1, Worst: 1}) {
		t.Fatalf("price %+v", p)
	}
	for _, bad := range []pdl.Config{
		{BaseURL: "ftp://x", APIKey: "k"},
		{BaseURL: "https://u:p@x", APIKey: "k"},
		{BaseURL: "https://x", APIKey: " "},
		{BaseURL: "https://x", APIKey: "k", BatchSize: 101},
		{BaseURL: "https://x", APIKey: "k", MinLikelihood: map[domain.InputKind]int{domain.InputEmail: 11}},
		{BaseURL: "https://x", APIKey: "k", MinLikelihood: map[domain.InputKind]int{domain.InputMember: 5}},
		{BaseURL: "https://x", APIKey: "k", Required: map[domain.Stage]string{domain.StageVerify: "emails"}},
	} {
		if _, err := pdl.New(bad); err == nil {
			t.Errorf("New(%v) accepted", bad)
		}
	}
}
