package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/seed"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/jobs/jobstest"
	"github.com/enrichq/enrichq/internal/store"
)

var verifyLookups = []domain.Stage{domain.StageProfile, domain.StageEmail, domain.StageVerify}

// listFinder is an email finder behind the adapter contract whose email
// stage answers a profile URL with the address its list gives (none: a
// miss, free), billed one credit a hit.
type listFinder struct {
	name  string
	addrs map[string]string // profile URL -> address
	mu    sync.Mutex
	calls int
}

func (f *listFinder) Name() string { return f.name }
func (f *listFinder) Caps() enrich.Caps {
	return enrich.Caps{Stages: []domain.Stage{domain.StageEmail},
		Inputs:  map[domain.Stage][]domain.InputKind{domain.StageEmail: {domain.InputProfileURL}},
		Billing: enrich.Billing{Rules: map[domain.Stage]enrich.BillingRule{domain.StageEmail: enrich.BillPerMatch}, HonoursKeys: domain.HonoursKeysFalse}}
}
func (f *listFinder) Price(enrich.Question) enrich.Price { return enrich.Price{Hit: 1, Worst: 1} }
func (f *listFinder) MaxCharge(enrich.Question) int64    { return 1 }
func (f *listFinder) Ask(_ context.Context, q enrich.Question, _ string) (enrich.Answer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	addr, ok := f.addrs[q.Query.ProfileURL]
	if !ok {
		return enrich.Answer{}, nil
	}
	return enrich.Answer{Email: &enrich.Email{Address: addr, Confidence: 0.8, Raw: []byte(fmt.Sprintf(`{"email":%q,"confidence":0.8}`, addr))},
		Charge: enrich.Charge{Credits: 1, Estimate: 1}}, nil
}
func (f *listFinder) AskBulk(context.Context, []enrich.Question, string) (enrich.BulkAnswer, error) {
	return enrich.BulkAnswer{}, &enrich.Error{Class: enrich.ClassPermanent, Code: "no_bulk"}
}
func (f *listFinder) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// verifyRig is a bundle (its seed fake unused by the list finders) and a
// processor over the given adapters, in order.
func verifyProcessor(t *testing.T, b *jobstest.Bundle, vs ...enrich.Vendor) *jobs.Processor {
	t.Helper()
	return verifyProcessorOrdered(t, b, jobs.StaticOrder{}, vs...)
}

// verifyProcessorOrdered is verifyProcessor with an Orderer.
func verifyProcessorOrdered(t *testing.T, b *jobstest.Bundle, o jobs.Orderer, vs ...enrich.Vendor) *jobs.Processor {
	t.Helper()
	tag := fmt.Sprintf("%d", time.Now().UnixNano())
	var cfgs []jobs.VendorConfig
	for _, v := range vs {
		cfgs = append(cfgs, jobs.VendorConfig{Vendor: v, Limiter: noLimit{}, Account: "acct-" + v.Name() + "-" + tag})
	}
	return jobs.NewProcessor(b.Store, cfgs, jobs.ProcessorConfig{Now: func() time.Time { return time.Now().Add(-time.Hour) },
		RetryBase: time.Millisecond, RetryMax: time.Millisecond, Orderer: o}, b.Log)
}

// urlRows are rows of profile URLs p/<tag>-<i>.
func urlRows(tag string, n int) []ingest.RowIn {
	rows := make([]ingest.RowIn, n)
	for i := range rows {
		rows[i] = ingest.RowIn{Ref: fmt.Sprintf("%s-%d", tag, i), ProfileURL: fmt.Sprintf("https://platform.example/in/%s-%d", tag, i)}
	}
	return rows
}

func urlOf(tag string, i int) string { return fmt.Sprintf("https://platform.example/in/%s-%d", tag, i) }

// results reads a job's results by ref.
func resultsByRef(t *testing.T, st *store.Store, jobID string) map[string]store.Result {
	t.Helper()
	res, err := st.ListResults(context.Background(), jobID, "", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Result{}
	for _, r := range res {
		out[r.Ref] = r
	}
	return out
}

// verifyLedger sums a job's ledger by vendor and stage.
func verifyLedger(t *testing.T, st *store.Store, jobID string) map[string]int64 {
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
		out[e.Vendor+"/"+string(e.Stage)] += e.Charged
	}
	return out
}

// Every email a job delivers, whoever found it (the seed by profile URL, PDL
// in its person record), carries the verifier's verdict in the results and
// the feed; each address is verified once; the verifier is billed for what
// it bills (webmail, disposable and unknown free) and the ledger says so.
func TestVerifyEveryDeliveredEmailCarriesItsStatus(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultPDLOptions()
	opts.HitRate, opts.WorkEmailRate = 0.5, 1
	r := newWaterfallRig(t, opts)
	ver := enrichtest.NewVerifier("checker")
	statuses := []enrich.EmailStatus{enrich.StatusValid, enrich.StatusAcceptAll, enrich.StatusWebmail, enrich.StatusDisposable, enrich.StatusUnknown}
	// By domain: a catch-all is a domain's, and so is a webmail's.
	ver.Verdict = func(addr string) enrich.EmailStatus {
		_, dom, _ := strings.Cut(addr, "@")
		return statuses[len(dom)%len(statuses)]
	}
	job := r.b.Submit(t, people("ver", 30), ingest.JobOptions{Lookups: verifyLookups})
	proc := jobs.NewProcessor(r.b.Store, []jobs.VendorConfig{
		{Vendor: r.pv, Limiter: noLimit{}, Account: "acct-pdl-" + job.ID[:8]},
		{Vendor: seed.New("seed", r.b.Client, ""), Limiter: noLimit{}, Account: "acct-seed-" + job.ID[:8]},
		{Vendor: ver, Limiter: noLimit{}, Account: "acct-ver-" + job.ID[:8]},
	}, jobs.ProcessorConfig{Now: func() time.Time { return time.Now().Add(-time.Hour) }}, r.b.Log)
	runRounds(t, r.b, proc, job.ID, 2)
	r.b.WaitJob(t, job.ID, domain.JobCompleted)

	res := resultsByRef(t, r.b.Store, job.ID)
	emails, bySource, asked := 0, map[string]int{}, map[string]bool{}
	for ref, x := range res {
		if x.FoundEmail == nil {
			continue
		}
		emails++
		want := ver.Verdict(strings.ToLower(x.FoundEmail.Email))
		if x.FoundEmail.Status != string(want) {
			t.Errorf("%s: email %s status %q, want the verifier's %q", ref, x.FoundEmail.Email, x.FoundEmail.Status, want)
		}
		n := ver.Asks(x.FoundEmail.Email)
		if n > 1 || n == 0 && want != enrich.StatusAcceptAll {
			t.Errorf("%s: %s verified %d times, want once (none: another address showed its domain a catch-all)", ref, x.FoundEmail.Email, n)
		}
		asked[strings.ToLower(x.FoundEmail.Email)] = true
	}
	src := feedSources(t, r.b.Store)
	items, err := r.b.Store.ResultsFeed(context.Background(), "acme", 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	feedEmails := 0
	for _, it := range items {
		if it.Kind != store.FeedEmail {
			continue
		}
		feedEmails++
		bySource[src[fmt.Sprintf("%d/email", it.RowID)]]++
		if want := ver.Verdict(strings.ToLower(it.FoundEmail.Email)); it.FoundEmail.Status != string(want) {
			t.Errorf("feed: email %s status %q, want %q", it.FoundEmail.Email, it.FoundEmail.Status, want)
		}
	}
	if emails == 0 || feedEmails != emails || bySource["pdl"] == 0 || bySource["seed"] == 0 {
		t.Fatalf("%d emails in results, %d in the feed, by source %v: want emails of both finders", emails, feedEmails, bySource)
	}
	var free int64
	for s, n := range ver.Verdicts() {
		if enrichtest.VerifyPrice(s) == 0 {
			free += n
		}
	}
	if free == 0 {
		t.Fatalf("verdicts %v: want free ones too", ver.Verdicts())
	}
	led := verifyLedger(t, r.b.Store, job.ID)
	if led["checker/verify"] != ver.Billed() || ver.Calls() > int64(len(asked)) {
		t.Errorf("verify ledger %d, verifier billed %d; %d calls for %d addresses", led["checker/verify"], ver.Billed(), ver.Calls(), len(asked))
	}
	if j, _ := r.b.Store.JobByID(context.Background(), job.ID); j.CreditsSpent != led["pdl/profile"]+led["pdl/email"]+led["seed/profile"]+led["seed/email"]+led["checker/verify"] {
		t.Errorf("job spent %d, ledger %v", j.CreditsSpent, led)
	}
}

// With verify asked, an invalid address is never delivered: the email stage
// goes on to the next finder, which finds a good one, or the row has no
// email. A later finder's same address is known invalid without a second
// verification.
func TestVerifyInvalidAddressGoesToTheNextFinder(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.Enqueuer = nil
	first := &listFinder{name: "first", addrs: map[string]string{}}
	second := &listFinder{name: "second", addrs: map[string]string{}}
	for i := range 6 {
		first.addrs[urlOf("inv", i)] = fmt.Sprintf("bad.%d@acme.example", i)
	}
	second.addrs[urlOf("inv", 0)] = "ann.0@acme.example" // a good one
	second.addrs[urlOf("inv", 1)] = "bad.1@acme.example" // the same invalid address
	// rows 2..5: the second finder has nothing
	ver := enrichtest.NewVerifier("checker")
	job := b.Submit(t, urlRows("inv", 6), ingest.JobOptions{Lookups: []domain.Stage{domain.StageEmail, domain.StageVerify}})
	runRounds(t, b, verifyProcessor(t, b, first, second, ver), job.ID, 1)
	b.WaitJob(t, job.ID, domain.JobCompleted)
	res := resultsByRef(t, b.Store, job.ID)
	if e := res["inv-0"].FoundEmail; e == nil || e.Email != "ann.0@acme.example" || e.Status != "valid" {
		t.Errorf("row 0: email %+v, want the second finder's valid address", e)
	}
	for i := 1; i < 6; i++ {
		x := res[fmt.Sprintf("inv-%d", i)]
		if x.FoundEmail != nil {
			t.Errorf("row %d: an invalid address delivered: %+v", i, x.FoundEmail)
		}
		if !strings.Contains(strings.Join(stagesOf(x.NoMatches), ","), "email") {
			t.Errorf("row %d: no-matches %v, want email", i, x.NoMatches)
		}
	}
	if n := ver.Asks("bad.1@acme.example"); n != 1 {
		t.Errorf("bad.1 verified %d times: the second finder's same address is known invalid", n)
	}
	if first.Calls() != 6 || second.Calls() != 6 {
		t.Errorf("finders called %d and %d times, want 6 each (every row goes on to the second)", first.Calls(), second.Calls())
	}
	led := verifyLedger(t, b.Store, job.ID)
	if led["checker/verify"] != ver.Billed() || ver.Billed() != 7 || led["first/email"] != 6 || led["second/email"] != 2 {
		t.Errorf("ledger %v, verifier billed %d (want 7: six invalid, one valid)", led, ver.Billed())
	}
}

// A finder's address that the verifier finds invalid teaches the learned
// order a miss of that finder's email stage, not a find: the buyer got no
// email from it.
func TestVerifyInvalidAddressTeachesAMiss(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.Enqueuer = nil
	first := &listFinder{name: "first", addrs: map[string]string{}}
	second := &listFinder{name: "second", addrs: map[string]string{}}
	for i := range 4 {
		first.addrs[urlOf("teach", i)] = fmt.Sprintf("bad.%d@acme.example", i)
	}
	second.addrs[urlOf("teach", 0)] = "ann.0@acme.example" // valid
	second.addrs[urlOf("teach", 1)] = "bad.1@acme.example" // the first's invalid address, known at once
	o := &recordingOrder{}
	job := b.Submit(t, urlRows("teach", 4), ingest.JobOptions{Lookups: []domain.Stage{domain.StageEmail, domain.StageVerify}})
	runRounds(t, b, verifyProcessorOrdered(t, b, o, first, second, enrichtest.NewVerifier("checker")), job.ID, 1)
	b.WaitJob(t, job.ID, domain.JobCompleted)
	o.mu.Lock()
	defer o.mu.Unlock()
	found := map[string]int{}
	asked := map[string]int{}
	for _, ob := range o.obs {
		if ob.Stage != domain.StageEmail {
			continue
		}
		asked[ob.Vendor]++
		if ob.Found {
			found[ob.Vendor]++
		}
	}
	if asked["first"] != 4 || found["first"] != 0 {
		t.Errorf("first finder: %d found of %d asked, want 0 of 4 (every address it sold was invalid)", found["first"], asked["first"])
	}
	if asked["second"] != 4 || found["second"] != 1 {
		t.Errorf("second finder: %d found of %d asked, want 1 of 4 (one valid, one invalid, two misses)", found["second"], asked["second"])
	}
}

func stagesOf(ss []domain.Stage) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// A verdict is kept: a later job's same address comes with its verdict from
// the cache (no verification bought), and so does another address at a
// catch-all domain; an address known invalid from the cache sends its row
// on to the next finder without a verification.
func TestVerifyVerdictsAreCachedByAddressAndCatchAllDomain(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.Enqueuer = nil
	finder := &listFinder{name: "finder", addrs: map[string]string{
		urlOf("c1", 0): "ann@acme.example",
		urlOf("c1", 1): "bob@catchall-corp.example",
		urlOf("c1", 2): "bad.eve@acme.example",
		urlOf("c2", 0): "ann@acme.example",          // the same address, another person's row
		urlOf("c2", 1): "zoe@catchall-corp.example", // another address at the catch-all
		urlOf("c2", 2): "bad.eve@acme.example",      // known invalid
	}}
	ver := enrichtest.NewVerifier("checker")
	proc := verifyProcessor(t, b, finder, ver)
	opts := ingest.JobOptions{Lookups: []domain.Stage{domain.StageEmail, domain.StageVerify}}
	j1 := b.Submit(t, urlRows("c1", 3), opts)
	runRounds(t, b, proc, j1.ID, 1)
	b.WaitJob(t, j1.ID, domain.JobCompleted)
	if ver.Calls() != 3 {
		t.Fatalf("first job: %d verifications, want 3", ver.Calls())
	}
	j2 := b.Submit(t, urlRows("c2", 3), opts)
	runRounds(t, b, proc, j2.ID, 1)
	b.WaitJob(t, j2.ID, domain.JobCompleted)
	if ver.Calls() != 3 {
		t.Errorf("second job: %d more verifications, want none (the address and the catch-all domain are known)", ver.Calls()-3)
	}
	res := resultsByRef(t, b.Store, j2.ID)
	if e := res["c2-0"].FoundEmail; e == nil || e.Status != "valid" {
		t.Errorf("c2-0: %+v, want valid from the cache", e)
	}
	if e := res["c2-1"].FoundEmail; e == nil || e.Status != "accept_all" {
		t.Errorf("c2-1: %+v, want accept_all by its domain", e)
	}
	if e := res["c2-2"].FoundEmail; e != nil {
		t.Errorf("c2-2: %+v delivered, want none (known invalid)", e)
	}
	if led := verifyLedger(t, b.Store, j2.ID); led["checker/verify"] != 0 {
		t.Errorf("second job's ledger %v: no verification bought", led)
	}
	// The first job's rows again: their emails come from the cache, and so
	// do their verdicts; the invalid one is known before anything is bought.
	calls := finder.Calls()
	j3 := b.Submit(t, urlRows("c1", 3), opts)
	runRounds(t, b, proc, j3.ID, 1)
	b.WaitJob(t, j3.ID, domain.JobCompleted)
	res = resultsByRef(t, b.Store, j3.ID)
	if finder.Calls() != calls || ver.Calls() != 3 || res["c1-2"].FoundEmail != nil || res["c1-0"].FoundEmail == nil || res["c1-0"].FoundEmail.Status != "valid" {
		t.Errorf("third job: %d finder calls, %d verifications more; c1-0 %+v, c1-2 %+v: want none, the valid one delivered, the invalid one not",
			finder.Calls()-calls, ver.Calls()-3, res["c1-0"].FoundEmail, res["c1-2"].FoundEmail)
	}
}

// A verifier's "still checking" (202) is not waited for: the chunk ends
// with its rows in retry_wait, no attempt counted and nothing billed, and
// returns when to come back; the next run (the scheduler's) asks again,
// with the address the finder sold from the cache, and delivers it with
// its verdict.
func TestVerifyPendingIsAskedAgainLater(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.Enqueuer = nil
	finder := &listFinder{name: "finder", addrs: map[string]string{}}
	for i := range 4 {
		finder.addrs[urlOf("pend", i)] = fmt.Sprintf("p%d@acme.example", i)
	}
	ver := enrichtest.NewVerifier("checker")
	ver.PendingFirst, ver.RetryAfter = 1, 2*time.Second
	proc := verifyProcessor(t, b, finder, ver)
	job := b.Submit(t, urlRows("pend", 4), ingest.JobOptions{Lookups: []domain.Stage{domain.StageEmail, domain.StageVerify}})
	retryIn, err := proc.ProcessChunk(context.Background(), store.ChunkRef{JobID: job.ID, Chunk: 0})
	if err != nil {
		t.Fatal(err)
	}
	if retryIn <= 0 {
		t.Errorf("after a 202 the chunk asks no comeback (retry in %s)", retryIn)
	}
	counts, _ := b.Store.RowCounts(context.Background(), job.ID)
	if counts[domain.RowRetryWait] != 4 || ver.Calls() != 4 || ver.Billed() != 0 {
		t.Fatalf("rows %v, %d verifier calls, billed %d: want 4 waiting, 4 calls, nothing billed", counts, ver.Calls(), ver.Billed())
	}
	res := resultsByRef(t, b.Store, job.ID)
	for ref, x := range res {
		if x.Attempts != 0 || x.FoundEmail != nil {
			t.Errorf("%s: attempts %d, email %+v: a pending verdict is no failed attempt, and delivers nothing yet", ref, x.Attempts, x.FoundEmail)
		}
	}
	runRounds(t, b, proc, job.ID, 1)
	b.WaitJob(t, job.ID, domain.JobCompleted)
	res = resultsByRef(t, b.Store, job.ID)
	for ref, x := range res {
		if x.FoundEmail == nil || x.FoundEmail.Status != "valid" {
			t.Errorf("%s: email %+v, want it with its verdict", ref, x.FoundEmail)
		}
	}
	if finder.Calls() != 4 || ver.Calls() != 8 || ver.Billed() != 4 {
		t.Errorf("finder called %d times (want 4: the second run reads its answers from the cache), verifier %d (want 8), billed %d (want 4)",
			finder.Calls(), ver.Calls(), ver.Billed())
	}
	led := verifyLedger(t, b.Store, job.ID)
	if led["checker/verify"] != 4 || led["finder/email"] != 4 {
		t.Errorf("ledger %v", led)
	}
}

// Without verify asked, no email is verified and none carries a status.
func TestVerifyNotAskedVerifiesNothing(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.Enqueuer = nil
	finder := &listFinder{name: "finder", addrs: map[string]string{urlOf("no", 0): "bad.x@acme.example"}}
	ver := enrichtest.NewVerifier("checker")
	job := b.Submit(t, urlRows("no", 1), ingest.JobOptions{Lookups: []domain.Stage{domain.StageEmail}})
	runRounds(t, b, verifyProcessor(t, b, finder, ver), job.ID, 1)
	b.WaitJob(t, job.ID, domain.JobCompleted)
	if e := resultsByRef(t, b.Store, job.ID)["no-0"].FoundEmail; e == nil || e.Status != "" || ver.Calls() != 0 {
		t.Errorf("email %+v, %d verifications: want the address, unverified", e, ver.Calls())
	}
}

// A verifier whose month's quota is spent (its 429) is taken out of the
// order and the next verifier checks the rest; with none left the job
// pauses (vendor_access) rather than deliver an email unchecked.
func TestVerifyVerifierOutHandsOverOrPauses(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.Enqueuer = nil
	finder := &listFinder{name: "finder", addrs: map[string]string{}}
	for i := range 5 {
		finder.addrs[urlOf("out", i)] = fmt.Sprintf("o%d@acme.example", i)
		finder.addrs[urlOf("none", i)] = fmt.Sprintf("n%d@acme.example", i)
	}
	first, second := enrichtest.NewVerifier("first"), enrichtest.NewVerifier("second")
	first.Quota = 2
	opts := ingest.JobOptions{Lookups: []domain.Stage{domain.StageEmail, domain.StageVerify}}
	job := b.Submit(t, urlRows("out", 5), opts)
	proc := verifyProcessor(t, b, finder, first, second)
	runRounds(t, b, proc, job.ID, 2) // the concurrent checks may race the quota: rows may come back
	b.WaitJob(t, job.ID, domain.JobCompleted)
	for ref, x := range resultsByRef(t, b.Store, job.ID) {
		if x.FoundEmail == nil || x.FoundEmail.Status != "valid" {
			t.Errorf("%s: email %+v, want it verified", ref, x.FoundEmail)
		}
	}
	led := verifyLedger(t, b.Store, job.ID)
	if first.Billed() != 2 || second.Billed() != 3 || led["first/verify"] != 2 || led["second/verify"] != 3 {
		t.Errorf("billed first %d, second %d; ledger %v: want 2 and 3, as billed", first.Billed(), second.Billed(), led)
	}

	// Only verifiers that are out: the job pauses, nothing delivered.
	lone := enrichtest.NewVerifier("lone")
	lone.Quota = 1
	lone.Verdict = func(string) enrich.EmailStatus { return enrich.StatusValid }
	job2 := b.Submit(t, urlRows("none", 5), opts)
	proc2 := verifyProcessor(t, b, finder, lone)
	for range 3 {
		if _, err := proc2.ProcessChunk(context.Background(), store.ChunkRef{JobID: job2.ID}); err != nil {
			t.Fatal(err)
		}
	}
	j := b.WaitJob(t, job2.ID, domain.JobPaused)
	if cause, err := b.Store.JobPauseCause(context.Background(), "acme", job2.ID); err != nil || cause != domain.PausedByVendorAccess {
		t.Errorf("paused by %q (%s, %v), want vendor_access", cause, j.StateReason, err)
	}
	delivered := 0
	for ref, x := range resultsByRef(t, b.Store, job2.ID) {
		if x.FoundEmail != nil {
			delivered++
			if x.FoundEmail.Status != "valid" {
				t.Errorf("%s: email %+v delivered unchecked", ref, x.FoundEmail)
			}
		}
	}
	if delivered != 1 || lone.Billed() != 1 {
		t.Errorf("%d emails delivered, %d billed: want the one its quota checked", delivered, lone.Billed())
	}
}

// The seed's bulk call buys the email with the profile: its addresses are
// verified like a single lookup's; the invalid ones are not delivered and
// the rest carry their verdict; the verifier's bill is the ledger's.
func TestVerifyEmailsOfABulkCall(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	b.Submitter.Enqueuer = nil
	ver := enrichtest.NewVerifier("checker")
	ver.Verdict = func(addr string) enrich.EmailStatus {
		if len(addr)%3 == 0 {
			return enrich.StatusInvalid
		}
		return enrich.StatusValid
	}
	job := b.Submit(t, jobstest.Companies(40), ingest.JobOptions{Roles: []string{"CTO"}, Lookups: verifyLookups})
	proc := jobs.NewProcessor(b.Store, []jobs.VendorConfig{
		{Vendor: seed.New("seed", b.Client, ""), Limiter: noLimit{}, Account: "acct-seed-" + job.ID[:8]},
		{Vendor: ver, Limiter: noLimit{}, Account: "acct-ver-" + job.ID[:8]},
	}, jobs.ProcessorConfig{Bulk: true, Now: func() time.Time { return time.Now().Add(-time.Hour) }}, b.Log)
	runRounds(t, b, proc, job.ID, 2)
	b.WaitJob(t, job.ID, domain.JobCompleted)
	if b.Vendor.Stats().ByEndpoint["bulk"] == 0 {
		t.Fatal("no bulk call made")
	}
	delivered := 0
	for ref, x := range resultsByRef(t, b.Store, job.ID) {
		if x.FoundEmail == nil {
			continue
		}
		delivered++
		if x.FoundEmail.Status != "valid" {
			t.Errorf("%s: %s delivered with status %q", ref, x.FoundEmail.Email, x.FoundEmail.Status)
		}
	}
	v := ver.Verdicts()
	if delivered == 0 || v[enrich.StatusInvalid] == 0 || int64(delivered) != v[enrich.StatusValid] {
		t.Errorf("%d delivered, verdicts %v: want every valid one delivered, no invalid one", delivered, v)
	}
	if led := verifyLedger(t, b.Store, job.ID); led["checker/verify"] != ver.Billed() {
		t.Errorf("ledger %v, verifier billed %d", led, ver.Billed())
	}
}
