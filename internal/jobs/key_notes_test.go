package jobs_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/pdl"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
)

// A PDL key on a Free plan, past its purchased credits: its matches answer
// the profile; their true/false contact fields are no email, so the email
// stage falls through to the seed; the key's note says its plan hides
// contact data and that it spends into overage; the ledger is the bill.
func TestWaterfallPDLFreePlanAndOverageNoted(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultPDLOptions()
	opts.Knows = func(enrichtest.Lookup) bool { return true }
	opts.FreePlan, opts.WorkEmailRate, opts.NoProfileRate, opts.StartCredits, opts.OverageCredits = true, 1, 0, 3, 100
	r := newWaterfallRig(t, opts)
	job := r.b.Submit(t, people("free", 6), ingest.JobOptions{Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}})
	runRounds(t, r.b, r.processor(t, []string{"pdl", "seed"}, jobs.ProcessorConfig{}), job.ID, 3)
	r.b.WaitJob(t, job.ID, domain.JobCompleted)
	src := feedSources(t, r.b.Store)
	res, err := r.b.Store.ListResults(context.Background(), job.ID, "", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range res {
		if x.Profile == nil || src[fmt.Sprintf("%d/profile", x.RowID)] != "pdl" {
			t.Errorf("row %d: profile %v from %q, want pdl's", x.RowID, x.Profile != nil, src[fmt.Sprintf("%d/profile", x.RowID)])
		}
		if s := src[fmt.Sprintf("%d/email", x.RowID)]; x.FoundEmail != nil && s == "pdl" {
			t.Errorf("row %d: an email from pdl's hidden contact field", x.RowID)
		}
	}
	if r.b.Vendor.Stats().ByEndpoint["email"] == 0 {
		t.Error("the email stage did not fall through to the seed")
	}
	notes, err := r.b.Store.VendorKeyNotes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n, ok := notes["pdl"]
	if !ok || n.ContactsHiddenAt == nil || n.OverageSince == nil || n.PurchasedRemaining == nil || *n.PurchasedRemaining != 0 ||
		*n.OveragesRemaining < 97 || *n.OveragesRemaining > 100 { // written on the way in, then at most every minute
		t.Fatalf("pdl's key note %+v", n)
	}
	if led := ledgerByVendor(t, r.b.Store, job.ID); led["pdl"] != r.pdl.TotalBilled() || led["pdl"] != 6 {
		t.Errorf("ledger %v, pdl billed %d", led, r.pdl.TotalBilled())
	}
}

// countLimit records the cool-downs asked of it.
type countLimit struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (*countLimit) Wait(context.Context) error { return nil }
func (l *countLimit) Throttled(_ context.Context, d time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waits = append(l.waits, d)
	return nil
}
func (*countLimit) Succeeded(context.Context) {}

// Configured is the vendors file's rate the limiter was given.
func (*countLimit) Configured() float64 { return 10 }

// syncBuffer is a log a test reads while workers write it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An answer that spends the vendor's fixed rate window (X-RateLimit-
// Remaining {'minute': 0}) cools every worker on the key down until the
// window ends, before a 429 says so; a configured rate above the limit the
// vendor states (10/s against 1 a minute) is warned of, once.
func TestWaterfallPDLWindowSpentCoolsDown(t *testing.T) {
	t.Parallel()
	now := func() time.Time { return time.Date(2026, 3, 1, 12, 0, 15, 0, time.UTC) }
	opts := enrichtest.DefaultPDLOptions()
	opts.Knows = func(enrichtest.Lookup) bool { return true }
	opts.NoProfileRate, opts.RPM, opts.Now = 0, 1, now
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.Enqueuer = nil
	srv := httptest.NewServer(enrichtest.NewPDL(opts))
	t.Cleanup(srv.Close)
	pv, err := pdl.New(pdl.Config{Name: "pdl", BaseURL: srv.URL, APIKey: "test-key", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	lim := &countLimit{}
	var logs syncBuffer
	p := jobs.NewProcessor(b.Store, []jobs.VendorConfig{{Vendor: pv, Limiter: lim, Account: "acct-window"}},
		jobs.ProcessorConfig{Now: func() time.Time { return time.Now().Add(-time.Hour) }}, slog.New(slog.NewTextHandler(&logs, nil)))
	job := b.Submit(t, people("window", 1), ingest.JobOptions{Lookups: []domain.Stage{domain.StageProfile}})
	runRounds(t, b, p, job.ID, 1)
	b.WaitJob(t, job.ID, domain.JobCompleted)
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if len(lim.waits) != 1 || lim.waits[0] != 45*time.Second {
		t.Fatalf("cool-downs %v, want one of 45s, until the window's end", lim.waits)
	}
	if n := strings.Count(logs.String(), "configured rate is above the limit it states"); n != 1 {
		t.Fatalf("%d warnings of the rate above the vendor's limit, want 1:\n%s", n, logs.String())
	}
}
