package jobs_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/hunter"
	"github.com/enrichq/enrichq/internal/enrich/seed"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
)

// hunterRig is the seed's fake (jobstest's, half its profile searches
// found) and the Hunter-shaped fake, each behind its adapter.
type hunterRig struct {
	b    *jobstest.Bundle
	fake *enrichtest.Hunter
	hv   *hunter.Vendor
}

func newHunterRig(t *testing.T, opts enrichtest.HunterOptions) *hunterRig {
	return newHunterRigOver(t, opts, nil)
}

// newHunterRigOver speaks to the fake over transport (nil: Go's default).
func newHunterRigOver(t *testing.T, opts enrichtest.HunterOptions, transport http.RoundTripper) *hunterRig {
	t.Helper()
	b := jobstest.New(t, jobstest.Options{NoWorker: true, Vendor: func(o *enrichtest.SeedOptions) { o.ProfileHitRate = 0.5 }})
	b.Submitter.Enqueuer = nil
	fake := enrichtest.NewHunter(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	hv, err := hunter.New(hunter.Config{Name: "hunter", BaseURL: srv.URL, APIKey: "test-key", HTTPClient: &http.Client{Timeout: 5 * time.Second, Transport: transport}})
	if err != nil {
		t.Fatal(err)
	}
	return &hunterRig{b: b, fake: fake, hv: hv}
}

// processor asks the seed, then the email finder; lim paces the finder.
func (r *hunterRig) processor(t *testing.T, lim jobs.Limiter, cfg jobs.ProcessorConfig) *jobs.Processor {
	t.Helper()
	tag := fmt.Sprintf("%d", time.Now().UnixNano())
	if lim == nil {
		lim = noLimit{}
	}
	vs := []jobs.VendorConfig{
		{Vendor: seed.New("seed", r.b.Client, ""), Limiter: noLimit{}, Account: "acct-seed-" + tag},
		{Vendor: r.hv, Limiter: lim, Account: "acct-hunter-" + tag},
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().Add(-time.Hour) }
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase, cfg.RetryMax = time.Millisecond, time.Millisecond
	}
	return jobs.NewProcessor(r.b.Store, vs, cfg, r.b.Log)
}

// domainPeople are rows of a person's name at a company's domain: the
// finder's input.
func domainPeople(tag string, n int) []ingest.RowIn {
	rows := make([]ingest.RowIn, n)
	for i := range rows {
		rows[i] = ingest.RowIn{Ref: fmt.Sprintf("%s-%03d", tag, i), Name: fmt.Sprintf("Ann %s%03d", tag, i), Domain: fmt.Sprintf("acme-%s-%d.com", tag, i)}
	}
	return rows
}

func emailSources(t *testing.T, b *jobstest.Bundle, jobID string) (byVendor map[string]int, results []store.Result) {
	t.Helper()
	res, err := b.Store.ListResults(context.Background(), jobID, "", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	src := feedSources(t, b.Store)
	byVendor = map[string]int{}
	for _, x := range res {
		if x.FoundEmail != nil {
			byVendor[src[fmt.Sprintf("%d/email", x.RowID)]]++
		}
	}
	return byVendor, res
}

// The finder needs no profile: a row whose profile the seed did not find
// gets its email from it instead, a row whose email the seed missed after
// it; a miss is not charged, and the ledger is the finder's usage counters.
func TestHunterFindsEmailsWithoutAProfile(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultHunterOptions()
	opts.Knows = func(l enrichtest.Lookup) bool { return !strings.HasSuffix(l.Name, "3") }
	r := newHunterRig(t, opts)
	job := r.b.Submit(t, domainPeople("find", 30), ingest.JobOptions{Lookups: []domain.Stage{domain.StageEmail}})
	runRounds(t, r.b, r.processor(t, nil, jobs.ProcessorConfig{}), job.ID, 1)
	j := r.b.WaitJob(t, job.ID, domain.JobCompleted)
	byVendor, res := emailSources(t, r.b, job.ID)
	if byVendor["hunter"] == 0 || byVendor["seed"] == 0 {
		t.Fatalf("emails by vendor %v: want both to have found some", byVendor)
	}
	for _, x := range res {
		if x.Profile == nil && x.FoundEmail == nil && !strings.HasSuffix(x.Name, "3") {
			t.Errorf("row %q: no profile, and the finder that knows them was not asked", x.Name)
		}
		if x.Profile == nil && x.FoundEmail != nil && !strings.HasPrefix(x.FoundEmail.Email, "ann.") {
			t.Errorf("row %q: email %q is not the finder's", x.Name, x.FoundEmail.Email)
		}
	}
	led := ledgerByVendor(t, r.b.Store, job.ID)
	u := r.fake.Usage("test-key")
	if led["hunter"] != u.Searches || u.Searches != int64(byVendor["hunter"]) {
		t.Errorf("ledger %v, the finder's counters %+v, emails from it %d", led, u, byVendor["hunter"])
	}
	if led["seed"] != r.b.Vendor.TotalCharged() || j.CreditsSpent != led["seed"]+led["hunter"] {
		t.Errorf("ledger %v, job spent %d, seed billed %d", led, j.CreditsSpent, r.b.Vendor.TotalCharged())
	}
	entries, _ := r.b.Store.LedgerEntries(context.Background(), job.ID)
	var misses int
	for _, e := range entries {
		if e.Vendor == "hunter" && e.Charged == 0 && e.Status == store.LedgerSettled {
			misses++
		}
	}
	if misses == 0 {
		t.Error("no finder miss settled at 0: its misses are free")
	}
}

// A 429 (the month's searches spent) takes the finder out of the tenant's
// order, as a 402 elsewhere; the job finishes with the seed.
func TestHunter429TakesItOut(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultHunterOptions()
	opts.Searches = 0
	r := newHunterRig(t, opts)
	job := r.b.Submit(t, domainPeople("quota", 12), ingest.JobOptions{Lookups: []domain.Stage{domain.StageEmail}})
	runRounds(t, r.b, r.processor(t, nil, jobs.ProcessorConfig{LookupConcurrency: 1}), job.ID, 1)
	r.b.WaitJob(t, job.ID, domain.JobCompleted)
	out, err := r.b.Store.VendorsOut(context.Background(), "acme")
	if err != nil || len(out) != 1 || out[0].Vendor != "hunter" || out[0].Reason != "out of credits (429)" {
		t.Fatalf("vendors out %+v (%v), want hunter, out of credits (429)", out, err)
	}
	if n := r.fake.Stats().ByStatus[http.StatusTooManyRequests]; n != 1 {
		t.Errorf("the finder answered 429 %d times, want once: then it is out", n)
	}
	counts, _ := r.b.Store.RowCounts(context.Background(), job.ID)
	if counts[domain.RowFailed] != 0 || counts[domain.RowMatched]+counts[domain.RowNoMatch] != 12 {
		t.Errorf("rows %v: every row ends with the seed's answer", counts)
	}
	if led := ledgerByVendor(t, r.b.Store, job.ID); led["hunter"] != 0 {
		t.Errorf("ledger %v: a 429 bills nothing", led)
	}
}

// countingLimiter counts the vendor's "slow down"s.
type countingLimiter struct {
	noLimit
	throttled atomic.Int64
}

func (l *countingLimiter) Throttled(context.Context, time.Duration) error {
	l.throttled.Add(1)
	return nil
}

// A storm of 403s (rate limit reached) is paced by the shared limiter and
// retried: no row fails, every row ends with its answer.
func TestHunter403StormIsPacedNotFailed(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultHunterOptions()
	opts.Knows = func(enrichtest.Lookup) bool { return true }
	opts.StormCalls = 6
	r := newHunterRig(t, opts)
	job := r.b.Submit(t, domainPeople("storm", 16), ingest.JobOptions{Lookups: []domain.Stage{domain.StageEmail}})
	lim := &countingLimiter{}
	runRounds(t, r.b, r.processor(t, lim, jobs.ProcessorConfig{LookupConcurrency: 2}), job.ID, 4)
	r.b.WaitJob(t, job.ID, domain.JobCompleted)
	if n := r.fake.Stats().ByStatus[http.StatusForbidden]; n != 6 {
		t.Fatalf("the finder answered 403 %d times, want the storm's 6", n)
	}
	if lim.throttled.Load() != 6 {
		t.Errorf("the limiter was told to slow down %d times, want each 403 (6)", lim.throttled.Load())
	}
	counts, _ := r.b.Store.RowCounts(context.Background(), job.ID)
	if counts[domain.RowFailed] != 0 || counts[domain.RowMatched] != 16 {
		t.Errorf("rows %v: want every row matched, none failed", counts)
	}
	if led := ledgerByVendor(t, r.b.Store, job.ID); led["hunter"] != r.fake.Usage("test-key").Searches {
		t.Errorf("ledger %v, the finder's counters %+v", led, r.fake.Usage("test-key"))
	}
}

// A person who opted out at the finder (451) is recorded and audited,
// nothing of theirs is kept from it, and no later job asks it about them.
func TestHunter451PersonNeverAskedAgain(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultHunterOptions()
	opts.Knows = func(enrichtest.Lookup) bool { return true }
	opts.Suppressed = func(l enrichtest.Lookup) bool { return strings.HasSuffix(l.Name, "1") }
	r := newHunterRig(t, opts)
	rows := domainPeople("optout", 12)
	proc := r.processor(t, nil, jobs.ProcessorConfig{})
	var jobIDs []string
	for range 2 {
		job := r.b.Submit(t, rows, ingest.JobOptions{Lookups: []domain.Stage{domain.StageEmail}})
		runRounds(t, r.b, proc, job.ID, 1)
		r.b.WaitJob(t, job.ID, domain.JobCompleted)
		jobIDs = append(jobIDs, job.ID)
	}
	for _, row := range rows {
		if !strings.HasSuffix(row.Name, "1") {
			continue
		}
		if n := r.fake.Asked(enrichtest.Lookup{Name: row.Name, Company: row.Domain}); n > 1 {
			t.Errorf("%s asked %d times after opting out, want once", row.Name, n)
		}
	}
	for _, id := range jobIDs {
		_, res := emailSources(t, r.b, id)
		src := feedSources(t, r.b.Store)
		for _, x := range res {
			if strings.HasSuffix(x.Name, "1") && x.FoundEmail != nil && src[fmt.Sprintf("%d/email", x.RowID)] == "hunter" {
				t.Errorf("%s: an email from the vendor they opted out of", x.Name)
			}
			if x.State == domain.RowFailed {
				t.Errorf("%s failed: an opt-out is not a failure", x.Name)
			}
		}
	}
	lines, err := r.b.Store.AuditLog(context.Background(), "acme", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var audited int
	for _, l := range lines {
		if l.Action == store.AuditVendorSuppressed {
			audited++
			if strings.Contains(l.Subject, "Ann") {
				t.Errorf("the audit line names the person: %q", l.Subject)
			}
		}
	}
	if audited != 1 {
		t.Errorf("%d audit lines of an opt-out, want 1 (one person)", audited)
	}
}

// Calls whose answers are lost after the vendor did the work (the
// connection reset: what a crash between the call and its settlement
// leaves, a sent call of unknown outcome) are counted at their worst case,
// then settled by the vendor's usage counters at the run's end: the ledger
// equals the fake's counters, whether the lost calls were billed (found
// emails) or not (misses).
func TestHunterLedgerMeetsUsageAcrossLostAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		knows, keepAlive bool
	}{{true, true}, {false, true}, {true, false}, {false, false}} {
		// With keep-alives, Go's transport re-sends a GET whose reused
		// connection was reset: the answer comes, and the first send may
		// have been billed too. Without, the answer is lost.
		t.Run(fmt.Sprintf("found=%v,keepalive=%v", tc.knows, tc.keepAlive), func(t *testing.T) {
			t.Parallel()
			opts := enrichtest.DefaultHunterOptions()
			opts.Knows = func(enrichtest.Lookup) bool { return tc.knows }
			opts.ResetRate = 0.3
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.DisableKeepAlives = !tc.keepAlive
			r := newHunterRigOver(t, opts, tr)
			job := r.b.Submit(t, domainPeople(fmt.Sprintf("lost%v%v", tc.knows, tc.keepAlive), 20), ingest.JobOptions{Lookups: []domain.Stage{domain.StageEmail}})
			runRounds(t, r.b, r.processor(t, nil, jobs.ProcessorConfig{LookupConcurrency: 1}), job.ID, 6)
			j := r.b.WaitJob(t, job.ID, domain.JobCompleted)
			if r.fake.Stats().Resets == 0 {
				t.Fatal("no answer was lost: the test proves nothing")
			}
			led := ledgerByVendor(t, r.b.Store, job.ID)
			u := r.fake.Usage("test-key")
			if led["hunter"] != u.Searches {
				t.Errorf("ledger %v, the finder's counters %+v (%d answers lost)", led, u, r.fake.Stats().Resets)
			}
			if j.CreditsSpent != led["seed"]+led["hunter"] {
				t.Errorf("job spent %d, ledger %v", j.CreditsSpent, led)
			}
			entries, _ := r.b.Store.LedgerEntries(context.Background(), job.ID)
			for _, e := range entries {
				if e.Vendor == "hunter" && e.Status == store.LedgerUnknown {
					t.Errorf("ledger %d still of unknown outcome", e.ID)
				}
			}
		})
	}
}
