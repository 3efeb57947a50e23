package seed_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/seed"
)

const testKey = "sk_live_s3cr3t-test-key"

// fake starts the fake vendor with the default options changed by mutate,
// accepting testKey.
func fake(t *testing.T, mutate func(*enrichtest.SeedOptions)) (*enrichtest.Seed, *httptest.Server) {
	t.Helper()
	opts := enrichtest.DefaultSeedOptions()
	opts.APIKeys = []string{testKey}
	if mutate != nil {
		mutate(&opts)
	}
	v := enrichtest.NewSeed(opts)
	srv := httptest.NewServer(v)
	t.Cleanup(srv.Close)
	return v, srv
}

// stub starts a tiny vendor answering with h.
func stub(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func client(t *testing.T, baseURL string, mutate func(*seed.Config)) *seed.Client {
	t.Helper()
	cfg := seed.Config{BaseURL: baseURL, APIKey: testKey}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := seed.NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

// vendorError asserts err is an *enrich.Error of class want.
func vendorError(t *testing.T, err error, want enrich.Class) *enrich.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want a %s error", want)
	}
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

// urls returns n profile URLs for which pred is want.
func urls(n int, want bool, pred func(string) bool) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		u := fmt.Sprintf("https://platform.example/in/person-%d", i)
		if pred(u) == want {
			out = append(out, u)
		}
	}
	return out
}

func profileHit(v *enrichtest.Seed) func(string) bool {
	return func(u string) bool { return v.ProfileHit(enrich.ProfileQuery{ProfileURL: u}) }
}

func ctx(t *testing.T) context.Context { return t.Context() }

func TestProfileMatch(t *testing.T) {
	t.Parallel()
	v, srv := fake(t, nil)
	c := client(t, srv.URL, nil)

	u := urls(1, true, profileHit(v))[0]
	res, err := c.Profile(ctx(t), enrich.ProfileQuery{ProfileURL: u}, "k-url")
	if err != nil {
		t.Fatal(err)
	}
	p := res.Profile
	if p == nil || p.ProfileURL != u || p.Name != "Person" || p.Company == "" || p.Role == "" || p.Headline == "" {
		t.Fatalf("profile = %+v", p)
	}
	var raw map[string]any
	if err := json.Unmarshal(p.Raw, &raw); err != nil || raw["vendor_score"] == nil {
		t.Fatalf("Raw does not keep unknown fields: %s (%v)", p.Raw, err)
	}
	if want := (enrich.Charge{Credits: 1, Reported: true, Remaining: 1_000_000 - 1, RemainingReported: true, Estimate: 1,
		Class: enrich.ProfileClass(domain.InputProfileURL, true)}); res.Charge != want {
		t.Fatalf("charge = %+v, want %+v", res.Charge, want)
	}

	// By name and company: the name is the role, the URL is generated.
	var q enrich.ProfileQuery
	for i := 0; ; i++ {
		q = enrich.ProfileQuery{Name: "VP Sales", Company: fmt.Sprintf("Acme %d", i)}
		if v.ProfileHit(q) {
			break
		}
	}
	res, err = c.Profile(ctx(t), q, "k-nc")
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Profile; p == nil || p.Role != "VP Sales" || p.Company != q.Company || !strings.HasPrefix(p.ProfileURL, "https://platform.example/in/") {
		t.Fatalf("profile = %+v", res.Profile)
	}
	if res.Charge.Credits != 2 {
		t.Fatalf("charge = %d, want 2", res.Charge.Credits)
	}

	// By email.
	for i := 0; ; i++ {
		q = enrich.ProfileQuery{Email: fmt.Sprintf("jane.doe%d@acme.com", i)}
		if v.ProfileHit(q) {
			break
		}
	}
	res, err = c.Profile(ctx(t), q, "k-email")
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Profile; p == nil || p.Name != "Jane Doe" || p.Company != "Acme" || res.Charge.Credits != 2 {
		t.Fatalf("profile = %+v, charge %+v", p, res.Charge)
	}
}

func TestProfileNoMatch(t *testing.T) {
	t.Parallel()
	t.Run("404 from the fake", func(t *testing.T) {
		t.Parallel()
		v, srv := fake(t, nil)
		c := client(t, srv.URL, nil)
		q := enrich.ProfileQuery{Name: "Nobody", Company: "Nowhere"}
		for i := 0; v.ProfileHit(q); i++ {
			q.Company = fmt.Sprint("Nowhere ", i)
		}
		res, err := c.Profile(ctx(t), q, "k")
		if err != nil || res.Profile != nil {
			t.Fatalf("= %+v, %v; want no match", res, err)
		}
		if res.Charge.Credits != 2 || !res.Charge.Reported {
			t.Fatalf("a no-match search is charged: %+v", res.Charge)
		}
	})
	t.Run("200 without profile_url from the fake", func(t *testing.T) {
		t.Parallel()
		v, srv := fake(t, func(o *enrichtest.SeedOptions) { o.NoMatchAs200 = true })
		c := client(t, srv.URL, nil)
		u := urls(1, false, profileHit(v))[0]
		res, err := c.Profile(ctx(t), enrich.ProfileQuery{ProfileURL: u}, "k")
		if err != nil || res.Profile != nil || res.Charge.Credits != 1 {
			t.Fatalf("= %+v, %v; want no match charged 1", res, err)
		}
	})
	for name, body := range map[string]string{
		"no profile_url":    `{"name": "Jane Doe", "company": "Acme"}`,
		"null profile_url":  `{"profile_url": null, "name": "Jane Doe"}`,
		"empty profile_url": `{"profile_url": ""}`,
		"null body":         `null`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := stub(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
			res, err := client(t, srv.URL, nil).Profile(ctx(t), enrich.ProfileQuery{ProfileURL: "https://platform.example/in/x"}, "k")
			if err != nil || res.Profile != nil {
				t.Fatalf("= %+v, %v; want no match", res, err)
			}
			if res.Charge.Reported || res.Charge.Credits != 1 {
				t.Fatalf("charge = %+v, want 1 by the cost table", res.Charge)
			}
		})
	}
}

func TestProfileToleratesOddFields(t *testing.T) {
	t.Parallel()
	body := `{"profile_url": "https://platform.example/in/jane", "name": 42, "headline": null,
		"technographics": ["Go", 7, null, "Postgres"], "company_size": {"min": 1}, "new_field": [1, 2]}`
	srv := stub(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
	res, err := client(t, srv.URL, nil).Profile(ctx(t), enrich.ProfileQuery{ProfileURL: "https://platform.example/in/jane"}, "k")
	if err != nil {
		t.Fatal(err)
	}
	p := res.Profile
	if p == nil || p.Name != "" || p.CompanySize != "" || strings.Join(p.Technographics, ",") != "Go,Postgres" || !strings.Contains(string(p.Raw), "new_field") {
		t.Fatalf("profile = %+v", p)
	}
}

func TestEmailAndPhone(t *testing.T) {
	t.Parallel()
	v, srv := fake(t, nil)
	c := client(t, srv.URL, nil)
	costs := enrich.DefaultCosts()

	for _, u := range urls(5, true, v.EmailHit) {
		res, err := c.Email(ctx(t), u, "e-"+u)
		if err != nil {
			t.Fatal(err)
		}
		e := res.Email
		if e == nil || !strings.Contains(e.Address, "@") || e.Confidence < 0.5 || e.Confidence > 1 {
			t.Fatalf("email = %+v", e)
		}
		if !res.Charge.Reported || res.Charge.Credits != costs.EmailCost(e) {
			t.Fatalf("charge = %+v, table says %d", res.Charge, costs.EmailCost(e))
		}
	}
	for _, u := range urls(5, true, v.PhoneHit) {
		res, err := c.Phone(ctx(t), u, "p-"+u)
		if err != nil {
			t.Fatal(err)
		}
		p := res.Phones
		if p == nil || len(p.Numbers) == 0 || !strings.HasPrefix(p.Numbers[0].Number, "+") || p.Numbers[0].Type == "" {
			t.Fatalf("phones = %+v", p)
		}
		if !res.Charge.Reported || res.Charge.Credits != costs.PhoneCost(p) {
			t.Fatalf("charge = %+v, table says %d", res.Charge, costs.PhoneCost(p))
		}
	}
}

func TestEmailAndPhoneNoMatch(t *testing.T) {
	t.Parallel()
	for _, as200 := range []bool{false, true} {
		t.Run(fmt.Sprintf("fake as200=%v", as200), func(t *testing.T) {
			t.Parallel()
			v, srv := fake(t, func(o *enrichtest.SeedOptions) { o.NoMatchAs200 = as200 })
			c := client(t, srv.URL, nil)
			u := urls(1, false, v.EmailHit)[0]
			er, err := c.Email(ctx(t), u, "e")
			if err != nil || er.Email != nil || er.Charge.Credits != 0 {
				t.Fatalf("email = %+v, %v; want a free no-match", er, err)
			}
			u = urls(1, false, v.PhoneHit)[0]
			pr, err := c.Phone(ctx(t), u, "p")
			if err != nil || pr.Phones != nil || pr.Charge.Credits != 0 {
				t.Fatalf("phone = %+v, %v; want a free no-match", pr, err)
			}
		})
	}
	for name, body := range map[string]string{
		"absent":         `{}`,
		"null":           `{"email": null, "phones": null}`,
		"empty":          `{"email": "", "phones": []}`,
		"number-less":    `{"phones": [{"type": "mobile"}]}`,
		"unknown fields": `{"status": "not_found"}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := stub(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
			c := client(t, srv.URL, nil)
			er, err := c.Email(ctx(t), "https://platform.example/in/x", "e")
			if err != nil || er.Email != nil {
				t.Fatalf("email = %+v, %v; want no match", er, err)
			}
			pr, err := c.Phone(ctx(t), "https://platform.example/in/x", "p")
			if err != nil || pr.Phones != nil {
				t.Fatalf("phone = %+v, %v; want no match", pr, err)
			}
		})
	}
}

func TestRateLimited(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, retryAfter string
		want             time.Duration
	}{
		{"seconds", "7", 7 * time.Second},
		{"HTTP date", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"date in the past", now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"absent", "", 0},
		{"garbage", "soon", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.Header().Set("X-RateLimit-Limit", "10")
				w.Header().Set("X-RateLimit-Remaining", "0")
				w.WriteHeader(http.StatusTooManyRequests)
			})
			c := client(t, srv.URL, func(cfg *seed.Config) { cfg.Now = func() time.Time { return now } })
			_, err := c.Profile(ctx(t), enrich.ProfileQuery{ProfileURL: "https://platform.example/in/x"}, "k")
			e := vendorError(t, err, enrich.ClassRateLimited)
			if e.RetryAfter != tc.want || !e.Retryable() || e.Status != 429 {
				t.Fatalf("error = %+v, want RetryAfter %s", e, tc.want)
			}
			if e.RateLimit == nil || e.RateLimit.Limit != 10 || e.RateLimit.Remaining != 0 || e.RateLimit.ResetIn != -1 {
				t.Fatalf("rate limit = %+v", e.RateLimit)
			}
		})
	}
	t.Run("fake past its burst", func(t *testing.T) {
		t.Parallel()
		clock := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		_, srv := fake(t, func(o *enrichtest.SeedOptions) {
			o.RPS, o.Burst = 2, 1
			o.Now = func() time.Time { return clock }
		})
		c := client(t, srv.URL, nil)
		q := enrich.ProfileQuery{ProfileURL: "https://platform.example/in/x"}
		if _, err := c.Profile(ctx(t), q, "a"); err != nil {
			t.Fatal(err)
		}
		_, err := c.Profile(ctx(t), q, "b")
		e := vendorError(t, err, enrich.ClassRateLimited)
		if e.RetryAfter != time.Second || e.Charge == nil || e.Charge.Credits != 0 {
			t.Fatalf("error = %+v", e)
		}
	})
}

func TestPermanent(t *testing.T) {
	t.Parallel()
	_, srv := fake(t, func(o *enrichtest.SeedOptions) { o.RejectSubstring = "POISON" })
	c := client(t, srv.URL, nil)

	_, err := c.Profile(ctx(t), enrich.ProfileQuery{Name: "POISON", Company: "Acme"}, "k1")
	e := vendorError(t, err, enrich.ClassPermanent)
	if e.Status != 400 || e.Code != "invalid_request" || e.Retryable() || e.Charge == nil || e.Charge.Credits != 0 {
		t.Fatalf("400: %+v", e)
	}
	_, err = c.Email(ctx(t), "not a profile url", "k2")
	e = vendorError(t, err, enrich.ClassPermanent)
	if e.Status != 422 || e.Code != "invalid_profile_url" {
		t.Fatalf("422: %+v", e)
	}
	if !strings.Contains(e.Error(), "422") || !strings.Contains(e.Error(), "invalid_profile_url") || !strings.Contains(e.Error(), "email") {
		t.Fatalf("error text %q lacks status, code or endpoint", e.Error())
	}

	srv413 := stub(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusRequestEntityTooLarge) })
	_, err = client(t, srv413.URL, nil).Bulk(ctx(t), []enrich.ProfileQuery{{ProfileURL: "https://platform.example/in/x"}}, nil, "k3")
	if e := vendorError(t, err, enrich.ClassPermanent); e.Status != 413 {
		t.Fatalf("413: %+v", e)
	}
}

func TestInvalidQueryRefusedBeforeAnyCall(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := stub(t, func(w http.ResponseWriter, r *http.Request) { calls.Add(1) })
	c := client(t, srv.URL, nil)
	for _, q := range []enrich.ProfileQuery{{}, {Name: "VP Sales"}, {ProfileURL: "https://x.example/in/a", Email: "a@b.c"}} {
		_, err := c.Profile(ctx(t), q, "k")
		vendorError(t, err, enrich.ClassPermanent)
	}
	_, err := c.Email(ctx(t), " ", "k")
	vendorError(t, err, enrich.ClassPermanent)
	_, err = c.Bulk(ctx(t), []enrich.ProfileQuery{{ProfileURL: "https://x.example/in/a"}}, []domain.Stage{"fax"}, "k")
	vendorError(t, err, enrich.ClassPermanent)
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d calls made, want 0", n)
	}
}

func TestUnauthorizedAndForbidden(t *testing.T) {
	t.Parallel()
	_, srv := fake(t, func(o *enrichtest.SeedOptions) { o.NoPlanKeys = []string{"basic-plan-key"} })
	q := enrich.ProfileQuery{ProfileURL: "https://platform.example/in/x"}

	_, err := client(t, srv.URL, func(c *seed.Config) { c.APIKey = "revoked-key" }).Profile(ctx(t), q, "k")
	e := vendorError(t, err, enrich.ClassUnauthorized)
	if e.Status != 401 || e.Retryable() || !e.StopsKey() {
		t.Fatalf("401: %+v", e)
	}
	_, err = client(t, srv.URL, func(c *seed.Config) { c.APIKey = "basic-plan-key" }).Profile(ctx(t), q, "k")
	e = vendorError(t, err, enrich.ClassForbidden)
	if e.Status != 403 || e.Code != "plan_required" || !e.StopsKey() {
		t.Fatalf("403: %+v", e)
	}
}

func TestServerErrors(t *testing.T) {
	t.Parallel()
	t.Run("503 from the fake", func(t *testing.T) {
		t.Parallel()
		v, srv := fake(t, func(o *enrichtest.SeedOptions) { o.FailRate = 1 })
		_, err := client(t, srv.URL, nil).Profile(ctx(t), enrich.ProfileQuery{ProfileURL: "https://platform.example/in/x"}, "k")
		e := vendorError(t, err, enrich.ClassTransient)
		if e.Status != 503 || !e.Retryable() || e.OutcomeUnknown {
			t.Fatalf("503: %+v", e)
		}
		if v.TotalCharged() != 0 {
			t.Fatalf("a 503 was charged")
		}
	})
	for _, tc := range []struct {
		status  int
		unknown bool
		retry   time.Duration
	}{{503, false, 5 * time.Second}, {500, true, 0}, {502, true, 0}, {504, true, 0}} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			t.Parallel()
			srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.retry > 0 {
					w.Header().Set("Retry-After", "5")
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, "<html>Bad Gateway</html>")
			})
			_, err := client(t, srv.URL, nil).Phone(ctx(t), "https://platform.example/in/x", "k")
			e := vendorError(t, err, enrich.ClassTransient)
			if e.Status != tc.status || e.OutcomeUnknown != tc.unknown || e.RetryAfter != tc.retry || e.Message == "" {
				t.Fatalf("%d: %+v", tc.status, e)
			}
		})
	}
}

func TestMalformedIsTransientOutcomeUnknown(t *testing.T) {
	t.Parallel()
	v, srv := fake(t, func(o *enrichtest.SeedOptions) { o.MalformedRate = 1 })
	c := client(t, srv.URL, nil)
	u := urls(1, true, profileHit(v))[0]
	q := enrich.ProfileQuery{ProfileURL: u}

	_, err := c.Profile(ctx(t), q, "same-key")
	e := vendorError(t, err, enrich.ClassTransient)
	if !e.OutcomeUnknown || e.Code != "malformed_response" || e.Charge == nil || e.Charge.Credits != 1 {
		t.Fatalf("malformed: %+v", e)
	}
	// The retry with the same key gets the vendor's stored answer, free.
	v.SetFaults(enrichtest.SeedFaults{})
	res, err := c.Profile(ctx(t), q, "same-key")
	if err != nil || res.Profile == nil || res.Charge.Credits != 0 || !res.Charge.Reported {
		t.Fatalf("retry = %+v, %v", res, err)
	}
	if v.TotalCharged() != 1 {
		t.Fatalf("charged %d, want 1", v.TotalCharged())
	}

	for name, body := range map[string]string{"truncated": `{"profile_url": "https://pla`, "not an object": `["x"]`, "empty": ``, "bad type": `{"profile_url": 7}`} {
		srv := stub(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
		_, err := client(t, srv.URL, nil).Profile(ctx(t), q, "k")
		if e := vendorError(t, err, enrich.ClassTransient); !e.OutcomeUnknown || e.Charge != nil {
			t.Fatalf("%s: %+v", name, e)
		}
	}
}

func TestResponseTooLarge(t *testing.T) {
	t.Parallel()
	srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"profile_url": "https://platform.example/in/x", "pad": "`+strings.Repeat("x", 2000)+`"}`)
	})
	c := client(t, srv.URL, func(c *seed.Config) { c.MaxResponseBytes = 1000 })
	_, err := c.Profile(ctx(t), enrich.ProfileQuery{ProfileURL: "https://platform.example/in/x"}, "k")
	if e := vendorError(t, err, enrich.ClassTransient); e.Code != "response_too_large" || !e.OutcomeUnknown {
		t.Fatalf("%+v", e)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
		select { // hold the answer until the client gives up
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	q := enrich.ProfileQuery{ProfileURL: "https://platform.example/in/x"}

	// The deadlines leave time to send the request first (so its outcome is unknown).
	c := client(t, srv.URL, func(c *seed.Config) { c.HTTPClient = &http.Client{Timeout: 100 * time.Millisecond} })
	_, err := c.Profile(ctx(t), q, "k")
	e := vendorError(t, err, enrich.ClassTransient)
	if e.Code != "timeout" || !e.OutcomeUnknown || e.Status != 0 {
		t.Fatalf("client timeout: %+v", e)
	}

	dctx, cancel := context.WithTimeout(ctx(t), 100*time.Millisecond)
	defer cancel()
	_, err = client(t, srv.URL, nil).Profile(dctx, q, "k")
	e = vendorError(t, err, enrich.ClassTransient)
	if e.Code != "timeout" || !e.OutcomeUnknown || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("context deadline: %+v", e)
	}
}

func TestSlowAnswerTimesOutThenReplaysFree(t *testing.T) {
	t.Parallel()
	v, srv := fake(t, func(o *enrichtest.SeedOptions) { o.SlowRate, o.SlowDelay = 1, time.Minute })
	u := urls(1, true, v.EmailHit)[0]
	// The fake bills before it delays; 200ms leaves it ample time to get there.
	c := client(t, srv.URL, func(c *seed.Config) { c.HTTPClient = &http.Client{Timeout: 200 * time.Millisecond} })
	_, err := c.Email(ctx(t), u, "row-1:email")
	if e := vendorError(t, err, enrich.ClassTransient); e.Code != "timeout" || !e.OutcomeUnknown {
		t.Fatalf("%+v", e)
	}
	v.SetFaults(enrichtest.SeedFaults{})
	res, err := c.Email(ctx(t), u, "row-1:email") // the retry sends the same key
	if err != nil || res.Email == nil {
		t.Fatalf("retry = %+v, %v", res, err)
	}
	want := enrich.DefaultCosts().EmailCost(res.Email)
	if res.Charge.Credits != 0 || v.TotalCharged() != want || len(v.Ledger()) != 1 {
		t.Fatalf("retry charged %d, fake charged %d in %d calls; want the work billed once (%d)", res.Charge.Credits, v.TotalCharged(), len(v.Ledger()), want)
	}
}

func TestConnectionErrors(t *testing.T) {
	t.Parallel()
	t.Run("reset after the work", func(t *testing.T) {
		t.Parallel()
		v, srv := fake(t, func(o *enrichtest.SeedOptions) { o.ResetRate = 1 })
		_, err := client(t, srv.URL, nil).Email(ctx(t), "https://platform.example/in/x", "k")
		e := vendorError(t, err, enrich.ClassTransient)
		if !e.OutcomeUnknown || e.Status != 0 || e.Code != "network_error" {
			t.Fatalf("reset: %+v", e)
		}
		if v.Stats().Resets == 0 {
			t.Fatal("the fake did not reset")
		}
	})
	t.Run("refused before sending", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		_, err := client(t, srv.URL, nil).Email(ctx(t), "https://platform.example/in/x", "k")
		if e := vendorError(t, err, enrich.ClassTransient); e.OutcomeUnknown {
			t.Fatalf("a refused connection cannot have been billed: %+v", e)
		}
	})
}

func TestBulkAgainstFake(t *testing.T) {
	t.Parallel()
	v, srv := fake(t, func(o *enrichtest.SeedOptions) { o.RejectSubstring = "POISON" })
	c := client(t, srv.URL, nil)
	rows := []enrich.ProfileQuery{{ProfileURL: "https://platform.example/in/POISON"}}
	for _, u := range urls(30, true, profileHit(v)) {
		rows = append(rows, enrich.ProfileQuery{ProfileURL: u})
	}
	for _, u := range urls(10, false, profileHit(v)) {
		rows = append(rows, enrich.ProfileQuery{ProfileURL: u})
	}
	rows = append(rows, enrich.ProfileQuery{Name: "CTO", Company: "Initech"}, enrich.ProfileQuery{Email: "mei.chen@globex.com"})

	res, err := c.Bulk(ctx(t), rows, []domain.Stage{domain.StageEmail, domain.StagePhone, domain.StageEmail}, "bulk-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != len(rows) {
		t.Fatalf("%d items for %d rows", len(res.Items), len(rows))
	}
	if e := res.Items[0].Err; e == nil || e.Class != enrich.ClassPermanent || e.Code != "invalid_request" || res.Items[0].EstimatedCredits != 0 {
		t.Fatalf("poison row: %+v", res.Items[0])
	}
	var sum int64
	for i, it := range res.Items[1:] {
		q := rows[i+1]
		if it.Err != nil {
			t.Fatalf("row %d: %v", i+1, it.Err)
		}
		if (it.Profile != nil) != v.ProfileHit(q) {
			t.Fatalf("row %d: profile %+v, fake says hit=%v", i+1, it.Profile, v.ProfileHit(q))
		}
		if it.Profile == nil {
			if it.Email != nil || it.Phones != nil {
				t.Fatalf("row %d: email or phones without a profile", i+1)
			}
		} else {
			if q.ProfileURL != "" && it.Profile.ProfileURL != q.ProfileURL { // matched by index, not position
				t.Fatalf("row %d answered with %s, want %s", i+1, it.Profile.ProfileURL, q.ProfileURL)
			}
			if (it.Email != nil) != v.EmailHit(it.Profile.ProfileURL) || (it.Phones != nil) != v.PhoneHit(it.Profile.ProfileURL) {
				t.Fatalf("row %d: email %v phones %v disagree with the fake", i+1, it.Email, it.Phones)
			}
		}
		sum += it.EstimatedCredits
	}
	if !res.Charge.Reported || res.Charge.Credits != v.TotalCharged() || sum != res.Charge.Credits {
		t.Fatalf("charge %+v, rows estimated %d, fake charged %d", res.Charge, sum, v.TotalCharged())
	}
}

func TestBulkMatchesByIndex(t *testing.T) {
	t.Parallel()
	// Six rows sent; the answer comes reversed, row 2 is missing, row 3 comes
	// twice, and results with an out-of-range or no index are dropped.
	srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Rows    []map[string]string `json:"rows"`
			Include []string            `json:"include"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Rows) != 6 || len(req.Include) != 1 || req.Include[0] != "email" {
			http.Error(w, `{"error": {"code": "bad_test"}}`, 400)
			return
		}
		io.WriteString(w, `{"results": [
			{"index": 5, "profile": {"profile_url": "u5"}, "email": {"email": "five@x.example", "verified": true}},
			{"index": 4, "error": {"code": "invalid_request", "message": "bad row"}},
			{"index": 3, "profile": {"profile_url": "u3"}},
			{"index": 3, "profile": {"profile_url": "u3-again"}},
			{"index": 1, "profile": null, "email": null},
			{"index": 0, "profile": {"profile_url": "u0"}, "email": {"email": "zero@x.example"}, "phones": [{"number": "+1"}]},
			{"index": 99, "profile": {"profile_url": "u99"}},
			{"profile": {"profile_url": "no-index"}},
			{"index": 2.5},
			"junk"
		]}`)
	})
	rows := make([]enrich.ProfileQuery, 6)
	for i := range rows {
		rows[i] = enrich.ProfileQuery{ProfileURL: fmt.Sprintf("https://platform.example/in/r%d", i)}
	}
	res, err := client(t, srv.URL, nil).Bulk(ctx(t), rows, []domain.Stage{domain.StageEmail}, "k")
	if err != nil {
		t.Fatal(err)
	}
	it := res.Items
	if it[0].Profile == nil || it[0].Profile.ProfileURL != "u0" || it[0].Email == nil || it[0].Email.Address != "zero@x.example" || it[0].Phones != nil {
		t.Fatalf("row 0 = %+v (phones were not asked)", it[0])
	}
	if it[1].Profile != nil || it[1].Err != nil {
		t.Fatalf("row 1 = %+v, want no match", it[1])
	}
	if e := it[2].Err; e == nil || e.Class != enrich.ClassTransient || !e.OutcomeUnknown || e.Code != "missing_result" {
		t.Fatalf("row 2 = %+v, want a transient missing result", it[2])
	}
	if e := it[3].Err; e == nil || e.Class != enrich.ClassTransient || e.Code != "duplicate_result" {
		t.Fatalf("row 3 = %+v, want a transient duplicate", it[3])
	}
	if e := it[4].Err; e == nil || e.Class != enrich.ClassPermanent || e.Message != "bad row" {
		t.Fatalf("row 4 = %+v", it[4])
	}
	if it[5].Profile == nil || it[5].Profile.ProfileURL != "u5" || it[5].Email == nil || !it[5].Email.Verified {
		t.Fatalf("row 5 = %+v", it[5])
	}
	// No credit headers: the table's estimate, the unknown rows at their worst.
	costs := enrich.DefaultCosts()
	want := (1 + 5) + 1 + (1 + 10) + 2*costs.RowWorst(rows[2], []domain.Stage{domain.StageEmail})
	if res.Charge.Reported || res.Charge.Credits != want {
		t.Fatalf("charge = %+v, want %d estimated", res.Charge, want)
	}
}

func TestBulkRefusedBeforeAnyCall(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := stub(t, func(w http.ResponseWriter, r *http.Request) { calls.Add(1) })
	c := client(t, srv.URL, nil)
	rows := make([]enrich.ProfileQuery, enrich.MaxBulkRows+1)
	for i := range rows {
		rows[i] = enrich.ProfileQuery{ProfileURL: fmt.Sprintf("https://platform.example/in/r%d", i)}
	}
	_, err := c.Bulk(ctx(t), rows, nil, "k")
	if e := vendorError(t, err, enrich.ClassPermanent); e.Code != "too_many_rows" {
		t.Fatalf("%+v", e)
	}
	// Invalid rows only: nothing to send.
	res, err := c.Bulk(ctx(t), []enrich.ProfileQuery{{}, {Company: "Acme"}}, nil, "k")
	if err != nil || res.Items[0].Err == nil || res.Items[1].Err == nil {
		t.Fatalf("= %+v, %v", res, err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d calls made, want 0", n)
	}
}

func TestBulkFakeRefusesOver100(t *testing.T) {
	t.Parallel()
	// The fake enforces the limit on its own (the client never sends more).
	_, srv := fake(t, nil)
	rows := make([]map[string]string, 101)
	for i := range rows {
		rows[i] = map[string]string{"profile_url": fmt.Sprintf("https://platform.example/in/r%d", i)}
	}
	body, _ := json.Marshal(map[string]any{"rows": rows})
	req, _ := http.NewRequestWithContext(ctx(t), "POST", srv.URL+"/v1/bulk", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
}

func TestCreditHeadersAbsent(t *testing.T) {
	t.Parallel()
	v, srv := fake(t, func(o *enrichtest.SeedOptions) { o.OmitCreditHeaders = true })
	c := client(t, srv.URL, nil)
	var seen int64
	for _, u := range urls(10, true, profileHit(v)) {
		pr, err := c.Profile(ctx(t), enrich.ProfileQuery{ProfileURL: u}, "p"+u)
		if err != nil {
			t.Fatal(err)
		}
		er, err := c.Email(ctx(t), u, "e"+u)
		if err != nil {
			t.Fatal(err)
		}
		ph, err := c.Phone(ctx(t), u, "ph"+u)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range []enrich.Charge{pr.Charge, er.Charge, ph.Charge} {
			if ch.Reported || ch.RemainingReported {
				t.Fatalf("charge %+v says reported without headers", ch)
			}
			seen += ch.Credits
		}
	}
	if seen != v.TotalCharged() { // the default table is the fake's price list
		t.Fatalf("cost table estimated %d, fake charged %d", seen, v.TotalCharged())
	}
}

func TestRequestHeaders(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, path, query, auth, accept, key, ctype string
	}
	got := make(chan seen, 4)
	srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Accept"),
			r.Header.Get("Idempotency-Key"), r.Header.Get("Content-Type")}
		w.WriteHeader(http.StatusNotFound)
		if r.URL.Path == "/v1/bulk" {
			io.WriteString(w, `{}`)
		}
	})
	c := client(t, srv.URL+"/v1/", nil) // a trailing /v1 is tolerated
	if _, err := c.Profile(ctx(t), enrich.ProfileQuery{Name: "VP Sales", Company: "Acme & Co"}, "idem-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Email(ctx(t), "https://platform.example/in/jane", "idem-2"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Phone(ctx(t), "https://platform.example/in/jane", "idem-3"); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Bulk(ctx(t), []enrich.ProfileQuery{{ProfileURL: "https://platform.example/in/jane"}}, nil, "idem-4")
	want := []seen{
		{"GET", "/v1/profile", "company=Acme+%26+Co&name=VP+Sales", "Bearer " + testKey, "application/json", "idem-1", ""},
		{"GET", "/v1/email", "profile_url=https%3A%2F%2Fplatform.example%2Fin%2Fjane", "Bearer " + testKey, "application/json", "idem-2", ""},
		{"GET", "/v1/phone", "profile_url=https%3A%2F%2Fplatform.example%2Fin%2Fjane", "Bearer " + testKey, "application/json", "idem-3", ""},
		{"POST", "/v1/bulk", "", "Bearer " + testKey, "application/json", "idem-4", "application/json"},
	}
	for i, w := range want {
		if g := <-got; g != w {
			t.Fatalf("request %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func TestIdempotentReplayChargedOnce(t *testing.T) {
	t.Parallel()
	v, srv := fake(t, nil)
	c := client(t, srv.URL, nil)
	u := urls(1, true, v.PhoneHit)[0]
	first, err := c.Phone(ctx(t), u, "job1:row7:phone")
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Phone(ctx(t), u, "job1:row7:phone")
	if err != nil {
		t.Fatal(err)
	}
	if first.Charge.Credits == 0 || second.Charge.Credits != 0 || !second.Charge.Reported {
		t.Fatalf("charges %+v then %+v, want the replay free", first.Charge, second.Charge)
	}
	if len(second.Phones.Numbers) != len(first.Phones.Numbers) {
		t.Fatalf("replay answered %+v, first %+v", second.Phones, first.Phones)
	}
	if v.TotalCharged() != first.Charge.Credits || len(v.Ledger()) != 1 {
		t.Fatalf("fake charged %d in %d calls, want %d once", v.TotalCharged(), len(v.Ledger()), first.Charge.Credits)
	}
	// Another key is new work.
	if _, err := c.Phone(ctx(t), u, "job1:row7:phone:retry-with-new-key"); err != nil {
		t.Fatal(err)
	}
	if v.TotalCharged() != 2*first.Charge.Credits {
		t.Fatalf("fake charged %d, want %d", v.TotalCharged(), 2*first.Charge.Credits)
	}
}

func TestAPIKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	// A hostile vendor that echoes the Authorization header everywhere it can.
	for _, status := range []int{200, 400, 401, 403, 404, 413, 422, 429, 500, 503} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			srv := stub(t, func(w http.ResponseWriter, r *http.Request) {
				auth := r.Header.Get("Authorization")
				w.Header().Set("Retry-After", auth)
				w.WriteHeader(status)
				switch {
				case r.URL.Path == "/v1/bulk" && status == 200:
					fmt.Fprintf(w, `{"results": [{"index": 0, "error": {"code": %q, "message": %q}}]}`, auth, "bad key "+auth)
				case status == 200:
					fmt.Fprintf(w, `{"profile_url": %q`, auth) // malformed
				case status == 404 && r.URL.Path == "/v1/bulk":
					fmt.Fprintf(w, `{"error": {"code": %q, "message": %q}}`, auth, auth)
				default:
					fmt.Fprintf(w, `{"error": {"code": %q, "message": "key %s is bad"}}`, auth, auth)
				}
			})
			c := client(t, srv.URL, nil)
			var errs []error
			_, err := c.Profile(ctx(t), enrich.ProfileQuery{ProfileURL: "https://platform.example/in/x"}, "k")
			errs = append(errs, err)
			res, err := c.Bulk(ctx(t), []enrich.ProfileQuery{{ProfileURL: "https://platform.example/in/x"}}, nil, "k")
			errs = append(errs, err)
			for _, it := range res.Items {
				if it.Err != nil {
					errs = append(errs, it.Err)
				}
			}
			for _, err := range errs {
				if err == nil {
					continue
				}
				for _, s := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err)} {
					if strings.Contains(s, testKey) {
						t.Fatalf("error text holds the key: %s", s)
					}
				}
				if e, ok := enrich.AsError(err); ok && (strings.Contains(e.Code, testKey) || strings.Contains(e.Message, testKey)) {
					t.Fatalf("error fields hold the key: %+v", e)
				}
			}
		})
	}
	cfg := seed.Config{BaseURL: "https://vendor.example", APIKey: testKey}
	c, err := seed.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c)} {
		if strings.Contains(s, testKey) {
			t.Fatalf("printing the config or client shows the key: %s", s)
		}
	}
}

func TestNewClientValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []seed.Config{
		{BaseURL: "", APIKey: "k"},
		{BaseURL: "vendor.example", APIKey: "k"},
		{BaseURL: "ftp://vendor.example", APIKey: "k"},
		{BaseURL: "https://user:" + testKey + "@vendor.example", APIKey: "k"},
		{BaseURL: "https://vendor.example?key=1", APIKey: "k"},
		{BaseURL: "https://vendor.example", APIKey: ""},
		{BaseURL: "https://vendor.example", APIKey: "two words"},
		{BaseURL: "https://vendor.example", APIKey: "k", Costs: enrich.CostTable{ProfileByURL: -1, EmailHit: 5}},
	} {
		if _, err := seed.NewClient(cfg); err == nil {
			t.Errorf("NewClient(%v) = nil error", cfg)
		} else if strings.Contains(err.Error(), testKey) {
			t.Errorf("error holds the key: %v", err)
		}
	}
}
