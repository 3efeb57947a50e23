package hunter_test

import (
	"context"

	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/hunter"
)

const key = "test-key"

func newPair(t *testing.T, opts enrichtest.HunterOptions, cfg hunter.Config) (*hunter.Vendor, *enrichtest.Hunter, *httptest.Server) {
	t.Helper()
	fake := enrichtest.NewHunter(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cfg.BaseURL, cfg.APIKey = srv.URL, key
	v, err := hunter.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v, fake, srv
}

func emailQ(name, dom string) enrich.Question {
	return enrich.Question{Stages: []domain.Stage{domain.StageEmail}, Query: enrich.ProfileQuery{Name: name, Domain: dom}}
}

func verifyQ(addr string) enrich.Question {
	return enrich.Question{Stages: []domain.Stage{domain.StageVerify}, Query: enrich.ProfileQuery{Email: addr}}
}

func classOf(t *testing.T, err error) enrich.Class {
	t.Helper()
	ve, ok := enrich.AsError(err)
	if !ok {
		t.Fatalf("want an *enrich.Error, got %v", err)
	}
	return ve.Class
}

func TestFinderChargesAFoundEmailAndNotAMiss(t *testing.T) {
	for _, as404 := range []bool{false, true} {
		t.Run(fmt.Sprintf("miss_as_404=%v", as404), func(t *testing.T) {
			opts := enrichtest.DefaultHunterOptions()
			opts.MissAs404 = as404
			opts.Knows = func(l enrichtest.Lookup) bool { return strings.HasPrefix(l.Name, "Ada") }
			v, fake, _ := newPair(t, opts, hunter.Config{SearchCredits: 3})
			a, err := v.Ask(context.Background(), emailQ("Ada Lovelace", "acme.com"), "")
			if err != nil {
				t.Fatal(err)
			}
			if a.Email == nil || a.Email.Address != "ada.lovelace@acme.com" || a.Email.Confidence <= 0 || a.Email.Confidence > 1 {
				t.Fatalf("found: %+v", a.Email)
			}
			if a.Charge.Credits != 3 || a.Charge.Reported {
				t.Fatalf("a found email: charge %+v, want 3 credits priced by the adapter", a.Charge)
			}
			miss, err := v.Ask(context.Background(), emailQ("Bob Nobody", "acme.com"), "")
			if err != nil {
				t.Fatal(err)
			}
			if miss.Email != nil || miss.Charge.Credits != 0 {
				t.Fatalf("a miss: %+v, want no email and no charge", miss)
			}
			if u := fake.Usage(key); u.Searches != 1 {
				t.Fatalf("the fake billed %d searches, want 1", u.Searches)
			}
		})
	}
}

func TestVerifierPricesByStatusAndLedgerMeetsUsage(t *testing.T) {
	opts := enrichtest.DefaultHunterOptions()
	opts.InvalidRate, opts.UnknownRate = 0.3, 0.2
	v, fake, _ := newPair(t, opts, hunter.Config{SearchCredits: 2, VerifyCredits: 1})
	ctx := context.Background()
	var ledger int64
	seen := map[enrich.EmailStatus]int{}
	addrs := []string{"x@gmail.com", "y@mailinator.com"}
	for i := range 60 {
		addrs = append(addrs, fmt.Sprintf("p%d@corp%d.com", i, i%7))
	}
	for _, addr := range addrs {
		a, err := v.Ask(ctx, verifyQ(addr), "")
		if err != nil {
			t.Fatal(err)
		}
		if a.Email == nil || a.Email.Status == "" || a.Email.Address != addr {
			t.Fatalf("%s: %+v, want a verdict", addr, a.Email)
		}
		if want := fake.Verdict(addr); string(a.Email.Status) != want {
			t.Fatalf("%s: status %s, the fake said %s", addr, a.Email.Status, want)
		}
		free := a.Email.Status == enrich.StatusWebmail || a.Email.Status == enrich.StatusDisposable || a.Email.Status == enrich.StatusUnknown
		if free != (a.Charge.Credits == 0) {
			t.Fatalf("%s (%s) charged %d", addr, a.Email.Status, a.Charge.Credits)
		}
		seen[a.Email.Status]++
		ledger += a.Charge.Credits
	}
	for _, n := range []string{"Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra"} {
		a, err := v.Ask(ctx, emailQ(n, "acme.com"), "")
		if err != nil {
			t.Fatal(err)
		}
		ledger += a.Charge.Credits
	}
	for _, s := range []enrich.EmailStatus{enrich.StatusValid, enrich.StatusInvalid, enrich.StatusWebmail, enrich.StatusDisposable, enrich.StatusUnknown} {
		if seen[s] == 0 {
			t.Errorf("no %s verdict among %v", s, seen)
		}
	}
	u := fake.Usage(key)
	if want := u.Searches*2 + u.Verifications*1; ledger != want {
		t.Fatalf("the adapter priced %d credits, the fake's counters say %d (%+v)", ledger, want, u)
	}
	// The account's counters are the balance witness: they fall by what was priced.
	usage, err := v.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if usage.Searches.Used != u.Searches || usage.Verifications.Used != u.Verifications {
		t.Fatalf("GET /v2/account %+v, the fake's counters %+v", usage, u)
	}
	bal, err := v.Balance(ctx)
	if err != nil || !bal.RemainingReported {
		t.Fatal(bal, err)
	}
	if want := (opts.Searches-u.Searches)*2 + (opts.Verifications - u.Verifications); bal.Remaining != want {
		t.Fatalf("balance %d, want %d", bal.Remaining, want)
	}
}

func TestSignals(t *testing.T) {
	ctx := context.Background()
	t.Run("403 slows down", func(t *testing.T) {
		opts := enrichtest.DefaultHunterOptions()
		opts.StormCalls = 2
		v, _, _ := newPair(t, opts, hunter.Config{})
		_, err := v.Ask(ctx, emailQ("Ada Lovelace", "acme.com"), "")
		if classOf(t, err) != enrich.ClassRateLimited {
			t.Fatalf("403: %v, want rate limited", err)
		}
		if ve, _ := enrich.AsError(err); ve.RetryAfter <= 0 || ve.OutcomeUnknown {
			t.Fatalf("403: %+v, want a wait and a known outcome", ve)
		}
	})
	t.Run("429 takes the vendor out", func(t *testing.T) {
		opts := enrichtest.DefaultHunterOptions()
		opts.Searches = 0
		v, fake, _ := newPair(t, opts, hunter.Config{})
		_, err := v.Ask(ctx, emailQ("Ada Lovelace", "acme.com"), "")
		if classOf(t, err) != enrich.ClassOutOfCredits {
			t.Fatalf("429: %v, want out of credits", err)
		}
		if ve, _ := enrich.AsError(err); !ve.StopsKey() {
			t.Fatal("429 should stop the key")
		}
		if fake.Usage(key).Searches != 0 {
			t.Fatal("a 429 billed")
		}
	})
	t.Run("202 then an answer", func(t *testing.T) {
		opts := enrichtest.DefaultHunterOptions()
		opts.PendingFirst = true
		v, fake, _ := newPair(t, opts, hunter.Config{})
		_, err := v.Ask(ctx, verifyQ("ada@acme.com"), "")
		if classOf(t, err) != enrich.ClassPending {
			t.Fatalf("202: %v, want pending", err)
		}
		if fake.Usage(key).Verifications != 0 {
			t.Fatal("a 202 billed")
		}
		a, err := v.Ask(ctx, verifyQ("ada@acme.com"), "")
		if err != nil || a.Email == nil || a.Email.Status == "" {
			t.Fatalf("asked again: %+v %v", a, err)
		}
	})
	t.Run("222 is pending", func(t *testing.T) {
		opts := enrichtest.DefaultHunterOptions()
		opts.NoAnswerRate = 1
		v, fake, _ := newPair(t, opts, hunter.Config{})
		_, err := v.Ask(ctx, verifyQ("ada@acme.com"), "")
		if classOf(t, err) != enrich.ClassPending || fake.Usage(key).Verifications != 0 {
			t.Fatalf("222: %v, want pending and nothing billed", err)
		}
	})
	t.Run("451 suppresses", func(t *testing.T) {
		opts := enrichtest.DefaultHunterOptions()
		opts.Suppressed = func(l enrichtest.Lookup) bool {
			return strings.HasPrefix(l.Name, "Ada") || strings.HasPrefix(l.Email, "ada")
		}
		v, _, _ := newPair(t, opts, hunter.Config{})
		for _, q := range []enrich.Question{emailQ("Ada Lovelace", "acme.com"), verifyQ("ada@acme.com")} {
			_, err := v.Ask(ctx, q, "")
			if classOf(t, err) != enrich.ClassSuppressed {
				t.Fatalf("451: %v, want suppressed", err)
			}
		}
	})
	t.Run("401", func(t *testing.T) {
		fake := enrichtest.NewHunter(enrichtest.DefaultHunterOptions())
		srv := httptest.NewServer(fake)
		defer srv.Close()
		v, err := hunter.New(hunter.Config{BaseURL: srv.URL, APIKey: "wrong-key"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.Ask(ctx, emailQ("Ada Lovelace", "acme.com"), "")
		if classOf(t, err) != enrich.ClassUnauthorized || strings.Contains(err.Error(), "wrong-key") {
			t.Fatalf("401: %v", err)
		}
	})
}

// The key travels in a header, never in a URL: an error (which may quote
// a URL) cannot hold it.
func TestKeyNeverInTheURL(t *testing.T) {
	var urls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		urls = append(urls, r.URL.String())
		if r.Header.Get("X-API-KEY") != "s3cret-key" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"errors":[{"id":"boom","code":500,"details":"key s3cret-key echoed"}]}`))
	}))
	defer srv.Close()
	v, err := hunter.New(hunter.Config{BaseURL: srv.URL, APIKey: "s3cret-key"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Ask(context.Background(), emailQ("Ada Lovelace", "acme.com"), "")
	if err == nil || strings.Contains(err.Error(), "s3cret-key") {
		t.Fatalf("error %v", err)
	}
	if ve, _ := enrich.AsError(err); !ve.OutcomeUnknown || ve.Class != enrich.ClassTransient {
		t.Fatalf("500: %+v, want transient of unknown outcome", ve)
	}
	for _, u := range urls {
		if strings.Contains(u, "s3cret") {
			t.Fatalf("the key in the URL %s", u)
		}
	}
}

func TestRefusedBeforeAnyCall(t *testing.T) {
	v, fake, _ := newPair(t, enrichtest.DefaultHunterOptions(), hunter.Config{})
	for _, q := range []enrich.Question{
		{Stages: []domain.Stage{domain.StageProfile}, Query: enrich.ProfileQuery{Name: "Ada", Domain: "acme.com"}},
		{Stages: []domain.Stage{domain.StageEmail}, Query: enrich.ProfileQuery{ProfileURL: "https://platform.example/in/ada"}},
		{Stages: []domain.Stage{domain.StageVerify}, Query: enrich.ProfileQuery{Name: "Ada", Domain: "acme.com"}},
		{Stages: []domain.Stage{domain.StageEmail, domain.StageVerify}, Query: enrich.ProfileQuery{Name: "Ada", Domain: "acme.com"}},
		{Stages: []domain.Stage{domain.StageEmail}, Query: enrich.ProfileQuery{Name: "VP Sales", Domain: "acme.com"}, Role: true},
	} {
		_, err := v.Ask(context.Background(), q, "")
		if classOf(t, err) != enrich.ClassPermanent {
			t.Fatalf("%+v: %v, want refused", q, err)
		}
		if p := v.Price(q); p.Worst != 0 {
			t.Fatalf("%+v priced %+v", q, p)
		}
	}
	if _, err := v.AskBulk(context.Background(), []enrich.Question{emailQ("Ada Lovelace", "acme.com")}, ""); err == nil {
		t.Fatal("a bulk call should be refused")
	}
	if n := fake.Stats().Requests; n != 0 {
		t.Fatalf("%d calls made", n)
	}
	if c := v.Caps(); c.MaxBulk != 0 || c.Billing.ChargeHeader != "" || !c.Answers(domain.StageEmail, domain.InputNameDomain, false) ||
		!c.Answers(domain.StageVerify, domain.InputEmail, false) || c.Answers(domain.StageEmail, domain.InputProfileURL, false) {
		t.Fatalf("caps %+v", c)
	}
}

func TestVendorsFileTwoQuotas(t *testing.T) {
	file := []byte(`vendors:
  - {name: finder, kind: hunter, url: "http://127.0.0.1:9", key_env: HK, rate: 10, credit_value: 6, verify_credit_value: 4}
  - {name: bad, kind: seed, url: "http://127.0.0.1:9", key_env: HK, rate: 1, verify_credit_value: 4}
`)
	vs, errs := config.ParseVendors("v.yaml", file, func(string) string { return "k" }, true)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "verify_credit_value") || !strings.Contains(errs[0].Error(), "only for kind hunter") {
		t.Fatalf("errors %v", errs)
	}
	s := vs.List[0]
	if s.CreditValue != 2 || s.SearchCredits != 3 || s.VerifyCredits != 2 || s.HonoursKeys != domain.HonoursKeysFalse {
		t.Fatalf("spec %+v: want a credit of 2 units, a search 3 credits, a verification 2", s)
	}
	v, err := enrich.Build(s, enrich.BuildOptions{Describe: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Price(emailQ("Ada Lovelace", "acme.com")).Worst * s.CreditValue; got != 6 {
		t.Fatalf("a search reserves %d units, want 6", got)
	}
	if got := v.Price(verifyQ("ada@acme.com")).Worst * s.CreditValue; got != 4 {
		t.Fatalf("a verification reserves %d units, want 4", got)
	}
	if _, ok := v.(enrich.BalanceReader); !ok {
		t.Fatal("the adapter should read its balance")
	}
}
