package jobs_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/pdl"
	"github.com/enrichq/enrichq/internal/enrich/seed"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
)

// waterfallRig is the seed's fake (jobstest's) and a PDL fake, each behind
// its adapter, and a processor over both in the order asked.
type waterfallRig struct {
	b   *jobstest.Bundle
	pdl *enrichtest.PDL
	pv  *pdl.Vendor
}

func newWaterfallRig(t *testing.T, opts enrichtest.PDLOptions) *waterfallRig {
	t.Helper()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.Enqueuer = nil
	fake := enrichtest.NewPDL(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	pv, err := pdl.New(pdl.Config{Name: "pdl", BaseURL: srv.URL, APIKey: "test-key", HTTPClient: &http.Client{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return &waterfallRig{b: b, pdl: fake, pv: pv}
}

// processor asks the vendors in order ("seed", "pdl"), each with its own
// account so that the witness reads each apart.
func (r *waterfallRig) processor(t *testing.T, order []string, cfg jobs.ProcessorConfig) *jobs.Processor {
	t.Helper()
	tag := fmt.Sprintf("%d", time.Now().UnixNano())
	seedVC := jobs.VendorConfig{Vendor: seed.New("seed", r.b.Client, ""), Limiter: noLimit{}, Account: "acct-seed-" + tag}
	pdlv := jobs.VendorConfig{Vendor: r.pv, Limiter: noLimit{}, Account: "acct-pdl-" + tag}
	var vs []jobs.VendorConfig
	for _, n := range order {
		switch n {
		case "seed":
			vs = append(vs, seedVC)
		case "pdl":
			vs = append(vs, pdlv)
		}
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().Add(-time.Hour) } // a row's retry is due at once
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase, cfg.RetryMax = time.Millisecond, time.Millisecond
	}
	return jobs.NewProcessor(r.b.Store, vs, cfg, r.b.Log)
}

// people are rows of a person's name at a company: inputs both vendors take.
func people(tag string, n int) []ingest.RowIn {
	rows := make([]ingest.RowIn, n)
	for i := range rows {
		rows[i] = ingest.RowIn{Ref: fmt.Sprintf("%s-%03d", tag, i), Name: fmt.Sprintf("Ann %s%03d", tag, i), Company: fmt.Sprintf("Acme %s %d GmbH", tag, i)}
	}
	return rows
}

// ledgerByVendor sums a job's ledger by vendor, and checks that it holds
// nothing reserved.
func ledgerByVendor(t *testing.T, st *store.Store, jobID string) map[string]int64 {
	t.Helper()
	entries, err := st.LedgerEntries(context.Background(), jobID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range entries {
		if e.Status == store.LedgerReserved {
			t.Errorf("ledger %d still reserved", e.ID)
		}
		if e.Vendor == "" {
			t.Errorf("ledger %d names no vendor", e.ID)
		}
		out[e.Vendor] += e.Charged
	}
	return out
}

// feedSources are the sources of a tenant's feed lines, by row and kind.
func feedSources(t *testing.T, st *store.Store) map[string]string {
	t.Helper()
	if _, err := st.AdvanceResultsFeed(context.Background()); err != nil {
		t.Fatal(err)
	}
	items, err := st.ResultsFeed(context.Background(), "acme", 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, it := range items {
		out[fmt.Sprintf("%d/%s", it.RowID, it.Kind)] = it.Source
	}
	return out
}

// A hit at the first vendor makes no call to the second; a person record
// with a work email answers the email stage with it, without a call; the
// results and the feed name the vendor.
func TestWaterfallHitAtFirstAsksNoOther(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultPDLOptions()
	opts.Knows = func(enrichtest.Lookup) bool { return true }
	opts.WorkEmailRate, opts.NoProfileRate = 1, 0
	r := newWaterfallRig(t, opts)
	job := r.b.Submit(t, people("hit", 12), ingest.JobOptions{Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}})
	runRounds(t, r.b, r.processor(t, []string{"pdl", "seed"}, jobs.ProcessorConfig{}), job.ID, 1)
	j := r.b.WaitJob(t, job.ID, domain.JobCompleted)
	if n := r.b.Vendor.Stats().Requests; n != 0 {
		t.Errorf("the second vendor was called %d times after the first answered every row", n)
	}
	if st := r.pdl.Stats(); st.Requests != 12 {
		t.Errorf("the first vendor was called %d times for 12 rows asking profile and email, want 12 (one record answers both)", st.Requests)
	}
	counts, _ := r.b.Store.RowCounts(context.Background(), job.ID)
	if counts[domain.RowMatched] != 12 {
		t.Fatalf("rows %v, want 12 matched", counts)
	}
	res, err := r.b.Store.ListResults(context.Background(), job.ID, "", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	src := feedSources(t, r.b.Store)
	for _, x := range res {
		if x.FoundEmail == nil || x.Profile == nil {
			t.Errorf("row %d: profile %v, email %v: a person record with a work email answers both", x.RowID, x.Profile != nil, x.FoundEmail != nil)
		}
		for _, kind := range []string{"profile", "email"} {
			if s := src[fmt.Sprintf("%d/%s", x.RowID, kind)]; s != "pdl" {
				t.Errorf("row %d: %s's source %q, want pdl", x.RowID, kind, s)
			}
		}
	}
	led := ledgerByVendor(t, r.b.Store, job.ID)
	if led["pdl"] != r.pdl.TotalBilled() || led["pdl"] != 12 || j.CreditsSpent != 12 {
		t.Errorf("ledger %v, job spent %d; pdl billed %d (one credit a match)", led, j.CreditsSpent, r.pdl.TotalBilled())
	}
}

// A miss falls through to the next vendor; each miss is priced as its
// vendor bills it: the seed's profile search billed, PDL's 404 free. The
// ledger, by vendor, is what each fake billed.
func TestWaterfallMissesFallThroughPricedAsBilled(t *testing.T) {
	t.Parallel()
	for _, order := range [][]string{{"seed", "pdl"}, {"pdl", "seed"}} {
		t.Run(strings.Join(order, "-"), func(t *testing.T) {
			t.Parallel()
			opts := enrichtest.DefaultPDLOptions()
			opts.HitRate = 0.5
			r := newWaterfallRig(t, opts)
			job := r.b.Submit(t, people("miss"+order[0], 40), ingest.JobOptions{})
			runRounds(t, r.b, r.processor(t, order, jobs.ProcessorConfig{}), job.ID, 1)
			j := r.b.WaitJob(t, job.ID, domain.JobCompleted)
			led := ledgerByVendor(t, r.b.Store, job.ID)
			if led["seed"] != r.b.Vendor.TotalCharged() || led["pdl"] != r.pdl.TotalBilled() || j.CreditsSpent != led["seed"]+led["pdl"] {
				t.Errorf("ledger %v, job spent %d; the fakes billed seed %d, pdl %d", led, j.CreditsSpent, r.b.Vendor.TotalCharged(), r.pdl.TotalBilled())
			}
			entries, _ := r.b.Store.LedgerEntries(context.Background(), job.ID)
			var pdlCalls, seedCalls int
			for _, e := range entries {
				switch e.Vendor {
				case "pdl":
					pdlCalls++
				case "seed":
					seedCalls++
					if e.Charged == 0 {
						t.Errorf("a seed profile search charged 0: it bills hit or miss")
					}
				}
			}
			// Every row asks the first vendor; only its misses ask the second.
			first, second := seedCalls, pdlCalls
			if order[0] == "pdl" {
				first, second = pdlCalls, seedCalls
			}
			counts, _ := r.b.Store.RowCounts(context.Background(), job.ID)
			if first != 40 || second == 0 || second >= 40 {
				t.Errorf("calls: first %d, second %d for 40 rows (rows %v)", first, second, counts)
			}
			if int64(pdlCalls) == r.pdl.TotalBilled() {
				t.Errorf("pdl billed %d for %d calls: its misses must be free", r.pdl.TotalBilled(), pdlCalls)
			}
			if counts[domain.RowNoMatch]+counts[domain.RowMatched] != 40 {
				t.Errorf("rows %v", counts)
			}
		})
	}
}

// An error is not a miss: a 503 at the first vendor is retried there, never
// sent on to the second.
func TestWaterfall503DoesNotFallThrough(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultPDLOptions()
	opts.FailRate = 1
	r := newWaterfallRig(t, opts)
	job := r.b.Submit(t, people("busy", 10), ingest.JobOptions{})
	runRounds(t, r.b, r.processor(t, []string{"pdl", "seed"}, jobs.ProcessorConfig{}), job.ID, 2)
	if n := r.b.Vendor.Stats().Requests; n != 0 {
		t.Errorf("the second vendor was called %d times: a 503 fell through", n)
	}
	if n := r.pdl.Stats().ByStatus[http.StatusServiceUnavailable]; n < 20 {
		t.Errorf("the first vendor answered 503 %d times in two rounds of 10 rows, want each row retried there", n)
	}
	counts, _ := r.b.Store.RowCounts(context.Background(), job.ID)
	if counts[domain.RowNoMatch] != 0 || counts[domain.RowMatched] != 0 {
		t.Errorf("rows %v: none may end on an error", counts)
	}
}

// A vendor out of credits (402) is taken out of the tenant's order, the job
// completes with the other, and the rows that skipped it are counted.
func TestWaterfall402TakesTheVendorOut(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultPDLOptions()
	opts.StartCredits = 0
	r := newWaterfallRig(t, opts)
	job := r.b.Submit(t, people("broke", 10), ingest.JobOptions{})
	runRounds(t, r.b, r.processor(t, []string{"pdl", "seed"}, jobs.ProcessorConfig{LookupConcurrency: 1}), job.ID, 1)
	j := r.b.WaitJob(t, job.ID, domain.JobCompleted)
	ctx := context.Background()
	out, err := r.b.Store.VendorsOut(ctx, "acme")
	if err != nil || len(out) != 1 || out[0].Vendor != "pdl" {
		t.Fatalf("vendors out %+v (%v), want pdl", out, err)
	}
	// Shown to the tenant: the class, never the vendor's text about the operator's account.
	if out[0].Reason != "out of credits (402)" {
		t.Errorf("vendor out with reason %q, want %q", out[0].Reason, "out of credits (402)")
	}
	if n := r.pdl.Stats().ByStatus[http.StatusPaymentRequired]; n != 1 {
		t.Errorf("pdl answered 402 %d times, want once: then it is out of the order", n)
	}
	if n := r.b.Vendor.Stats().Requests; n != 10 {
		t.Errorf("the seed was asked %d times, want every row (10)", n)
	}
	skips, err := r.b.Store.VendorSkips(ctx, job.ID)
	if err != nil || skips["pdl"] != 10 {
		t.Errorf("rows that skipped pdl %v (%v), want all 10 (one asked it, and went without its answer)", skips, err)
	}
	if led := ledgerByVendor(t, r.b.Store, job.ID); led["pdl"] != 0 || led["seed"] != r.b.Vendor.TotalCharged() || j.CreditsSpent != led["seed"] {
		t.Errorf("ledger %v, job spent %d, seed billed %d", led, j.CreditsSpent, r.b.Vendor.TotalCharged())
	}
}

// A PDL bulk answered out of order pairs each item with its row by
// metadata, in the pipeline: every row's profile is its own person's.
func TestWaterfallPDLBulkPairsByMetadata(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultPDLOptions()
	opts.Knows = func(l enrichtest.Lookup) bool { return !strings.HasSuffix(l.Name, "7") }
	opts.NoProfileRate = 0
	r := newWaterfallRig(t, opts)
	rows := people("bulk", 30)
	job := r.b.Submit(t, rows, ingest.JobOptions{})
	runRounds(t, r.b, r.processor(t, []string{"pdl", "seed"}, jobs.ProcessorConfig{Bulk: true}), job.ID, 1)
	r.b.WaitJob(t, job.ID, domain.JobCompleted)
	if r.pdl.Stats().Requests > 2 {
		t.Errorf("pdl called %d times: want its bulk", r.pdl.Stats().Requests)
	}
	res, err := r.b.Store.ListResults(context.Background(), job.ID, "", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	src := feedSources(t, r.b.Store)
	for _, x := range res {
		if x.Profile == nil {
			continue
		}
		from := src[fmt.Sprintf("%d/profile", x.RowID)]
		if from == "pdl" && !strings.EqualFold(x.Profile.Name, x.Name) {
			t.Errorf("row %q got %q's profile", x.Name, x.Profile.Name)
		}
		if strings.HasSuffix(x.Name, "7") && from == "pdl" {
			t.Errorf("row %q answered by pdl, which does not know it", x.Name)
		}
	}
}

// killingSeed does the seed's work for its n-th profile lookup, then kills
// the worker (its context) before the answer is read: the call's outcome is
// unknown to enrichq, and billed by the vendor.
type killingSeed struct {
	Vendor
	mu     sync.Mutex
	calls  int
	n      int
	cancel context.CancelFunc
}

func (k *killingSeed) Profile(ctx context.Context, q enrich.ProfileQuery, key string) (seed.ProfileResult, error) {
	r, err := k.Vendor.Profile(ctx, q, key)
	k.mu.Lock()
	k.calls++
	kill := k.calls == k.n
	k.mu.Unlock()
	if kill {
		k.cancel()
		return seed.ProfileResult{}, ctx.Err()
	}
	return r, err
}

// The ledger is the sum of both vendors' bills, by vendor, when a worker
// is killed mid-chunk (an answer the seed billed lost with it) and another
// worker takes the job over: the seed's replay of the lost answer settles
// the call of unknown outcome.
func TestWaterfallLedgerIsBothBillsAcrossAKill(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultPDLOptions()
	opts.HitRate = 0.5
	r := newWaterfallRig(t, opts)
	job := r.b.Submit(t, people("kill", 24), ingest.JobOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tag := fmt.Sprintf("%d", time.Now().UnixNano())
	vendors := func(api Vendor) []jobs.VendorConfig {
		return []jobs.VendorConfig{
			{Vendor: r.pv, Limiter: noLimit{}, Account: "acct-pdl-" + tag},
			{Vendor: seed.NewOver("seed", api, enrich.DefaultCosts(), ""), Limiter: noLimit{}, Account: "acct-seed-" + tag},
		}
	}
	cfg := jobs.ProcessorConfig{LookupConcurrency: 1, Lease: 500 * time.Millisecond, RetryBase: time.Millisecond, RetryMax: time.Millisecond}
	killed := jobs.NewProcessor(r.b.Store, vendors(&killingSeed{Vendor: r.b.Client, n: 3, cancel: cancel}), cfg, r.b.Log)
	j, _ := r.b.Store.JobByID(context.Background(), job.ID)
	for chunk := range j.ChunkCount {
		_, _ = killed.ProcessChunk(ctx, store.ChunkRef{JobID: job.ID, Chunk: chunk}) // cut short by the kill
	}
	entries, _ := r.b.Store.LedgerEntries(context.Background(), job.ID)
	unknown := 0
	for _, e := range entries {
		if e.Status == store.LedgerUnknown {
			unknown++
		}
	}
	if unknown != 1 {
		t.Fatalf("%d calls of unknown outcome after the kill, want the one lost", unknown)
	}
	runRounds(t, r.b, jobs.NewProcessor(r.b.Store, vendors(r.b.Client), cfg, r.b.Log), job.ID, 3)
	j = r.b.WaitJob(t, job.ID, domain.JobCompleted)
	led := ledgerByVendor(t, r.b.Store, job.ID)
	if led["seed"] != r.b.Vendor.TotalCharged() || led["pdl"] != r.pdl.TotalBilled() || j.CreditsSpent != led["seed"]+led["pdl"] {
		t.Errorf("ledger %v, job spent %d; the fakes billed seed %d, pdl %d", led, j.CreditsSpent, r.b.Vendor.TotalCharged(), r.pdl.TotalBilled())
	}
	if r.pdl.TotalBilled() == 0 || r.b.Vendor.TotalCharged() == 0 {
		t.Errorf("both vendors should have billed: pdl %d, seed %d", r.pdl.TotalBilled(), r.b.Vendor.TotalCharged())
	}
}

// A job's own vendors option wins over the configured order: its rows ask
// only those vendors, in its order, and a row is no_match when they said no.
func TestWaterfallJobVendorsOption(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultPDLOptions()
	opts.HitRate, opts.NoProfileRate = 0.5, 0
	r := newWaterfallRig(t, opts)
	ctx := context.Background()
	create := func(vendors ...string) store.Job {
		job, _, err := r.b.Store.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile},
			SourceFormat: "json", ChunkSize: 20, Vendors: vendors}, func(add func(store.NewRow) error) error {
			for i, p := range people("opt"+strings.Join(vendors, ""), 10) {
				if err := add(store.NewRow{InputRow: i + 1, Ref: p.Ref, Kind: domain.InputNameCompany, Name: p.Name, Company: p.Company}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return job
	}
	proc := r.processor(t, []string{"pdl", "seed"}, jobs.ProcessorConfig{})

	seedOnly := create("seed")
	if !slices.Equal(seedOnly.Vendors, []string{"seed"}) {
		t.Fatalf("the job's vendors %v", seedOnly.Vendors)
	}
	runRounds(t, r.b, proc, seedOnly.ID, 1)
	r.b.WaitJob(t, seedOnly.ID, domain.JobCompleted)
	if n := r.pdl.Stats().Requests; n != 0 {
		t.Errorf("pdl was asked %d times by a job that names the seed alone", n)
	}
	if n := r.b.Vendor.Stats().Requests; n != 10 {
		t.Errorf("the seed was asked %d times, want 10", n)
	}

	pdlOnly := create("pdl")
	runRounds(t, r.b, proc, pdlOnly.ID, 1)
	r.b.WaitJob(t, pdlOnly.ID, domain.JobCompleted)
	if n := r.b.Vendor.Stats().Requests; n != 10 {
		t.Errorf("the seed was asked %d more times by a job that names pdl alone", n-10)
	}
	counts, _ := r.b.Store.RowCounts(ctx, pdlOnly.ID)
	if int64(counts[domain.RowMatched]) != r.pdl.TotalBilled() || counts[domain.RowNoMatch] == 0 {
		t.Errorf("rows %v; pdl billed %d: its misses are the job's no-matches", counts, r.pdl.TotalBilled())
	}
}

// reversedOrder asks the vendors in reverse of the configured order and
// records what it is told.
type reversedOrder struct {
	mu      sync.Mutex
	queries []jobs.OrderQuery
	obs     []jobs.Observation
}

func (o *reversedOrder) Order(_ context.Context, q jobs.OrderQuery) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queries = append(o.queries, q)
	out := slices.Clone(q.Vendors)
	slices.Reverse(out)
	return out
}

func (o *reversedOrder) Observe(_ context.Context, obs []jobs.Observation) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.obs = append(o.obs, obs...)
	return nil
}

// Without a job's or a tenant's order, the Orderer orders each row's
// vendors, and is told what each answered, per segment.
func TestWaterfallAsksTheOrderer(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultPDLOptions()
	opts.Knows = func(enrichtest.Lookup) bool { return true }
	opts.NoProfileRate = 0
	r := newWaterfallRig(t, opts)
	job := r.b.Submit(t, people("ord", 6), ingest.JobOptions{})
	o := &reversedOrder{}
	runRounds(t, r.b, r.processor(t, []string{"seed", "pdl"}, jobs.ProcessorConfig{Orderer: o}), job.ID, 1)
	r.b.WaitJob(t, job.ID, domain.JobCompleted)
	if n := r.b.Vendor.Stats().Requests; n != 0 {
		t.Errorf("the seed, last in the Orderer's order, was asked %d times", n)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.queries) != 6 || !slices.Equal(o.queries[0].Vendors, []string{"seed", "pdl"}) || o.queries[0].Tenant != "acme" ||
		o.queries[0].Segment.Kind != domain.InputNameCompany {
		t.Errorf("order queries %+v", o.queries)
	}
	found := 0
	for _, ob := range o.obs {
		if ob.Vendor != "pdl" || ob.Stage != domain.StageProfile || ob.Segment.Kind != domain.InputNameCompany {
			t.Errorf("observation %+v", ob)
		}
		if ob.Found && ob.Credits == 1 {
			found++
		}
	}
	if found != 6 {
		t.Errorf("%d found observations of 1 credit, want 6: %+v", found, o.obs)
	}
}
