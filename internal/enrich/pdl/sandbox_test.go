package pdl_test

import (
	"os"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/pdl"
	"github.com/enrichq/enrichq/internal/upstream"
)

// sandboxURL is PDL's sandbox: the same wire as the real service, with
// fictitious people, spending no credits.
const sandboxURL = "https://sandbox.api.peopledatalabs.com"

// sandboxEmail is a fictitious person the sandbox knows (PDL's own Go
// client tests enrich it at min_likelihood 6).
const sandboxEmail = "reneewillis74@aol.com"

// The contract test against PDL's sandbox: the adapter's requests as the
// real service takes them (path, X-Api-Key, min_likelihood as a number,
// required per stage, a gzipped bulk with string metadata) and its answers
// as the adapter reads them. It runs only with a key.
func TestSandboxContract(t *testing.T) {
	key := os.Getenv("ENRICHQ_PDL_SANDBOX_KEY")
	if key == "" {
		t.Skip("the contract test against PDL's sandbox needs a PDL API key: ENRICHQ_PDL_SANDBOX_KEY=<key> go test -run TestSandboxContract -v ./internal/enrich/pdl/ (the sandbox spends no credits)")
	}
	v, err := pdl.New(pdl.Config{BaseURL: sandboxURL, APIKey: upstream.Secret(key)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	known := enrich.Question{Query: enrich.ProfileQuery{Email: sandboxEmail}, Stages: all}
	nobody := enrich.Question{Query: enrich.ProfileQuery{Name: "Zzyzx Qwertyuiop", Domain: "no-such-company-enrichq.example"},
		Stages: []domain.Stage{domain.StageProfile, domain.StageEmail}}

	a, err := v.Ask(ctx, known, "")
	if err != nil {
		t.Fatalf("single enrich of the sandbox's known person: %v", err)
	}
	if !a.Found() {
		t.Fatalf("the sandbox's known person not found: %+v", a)
	}
	t.Logf("single: profile %+v, charge %+v, rate limit %+v", a.Profile, a.Charge, a.RateLimit)
	if a.RateLimit != nil && a.RateLimit.Limit == -1 && a.RateLimit.Remaining == -1 && a.RateLimit.ResetIn == -1 {
		t.Errorf("rate-limit headers sent but none read: %+v", a.RateLimit)
	}

	if a, err := v.Ask(ctx, nobody, ""); err != nil || a.Found() || a.Charge.Credits != 0 {
		t.Fatalf("a nobody: %+v, %v", a, err)
	}

	b, err := v.AskBulk(ctx, []enrich.Question{nobody, known}, "")
	if err != nil {
		t.Fatalf("bulk (gzipped, metadata strings): %v", err)
	}
	if it := b.Items[1]; it.Err != nil || it.Profile == nil && it.Email == nil && it.Phones == nil {
		t.Fatalf("bulk item of the known person: %+v", it)
	}
	if it := b.Items[0]; it.Err != nil || it.Profile != nil {
		t.Fatalf("bulk item of a nobody: %+v", it)
	}
	t.Logf("bulk: charge %+v, rate limit %+v", b.Charge, b.RateLimit)

	bad, err := pdl.New(pdl.Config{BaseURL: sandboxURL, APIKey: "enrichq-not-a-key"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Ask(ctx, known, "")
	if e, ok := enrich.AsError(err); !ok || e.Class != enrich.ClassUnauthorized {
		t.Fatalf("a wrong key: %v, want unauthorized", err)
	}
}
