package jobs_test

import (
	"cmp"
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

// billedAndLost does the work of the first send of every Idempotency-Key
// (the vendor bills it) and loses its answer, on every single lookup: the
// retry is answered as a replay, charged 0.
type billedAndLost struct {
	Vendor
	mu   sync.Mutex
	seen map[string]bool
}

func (v *billedAndLost) first(key string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	f := !v.seen[key]
	v.seen[key] = true
	return f
}

func (v *billedAndLost) Profile(ctx context.Context, q enrich.ProfileQuery, key string) (seed.ProfileResult, error) {
	if v.first(key) {
		_, _ = v.Vendor.Profile(ctx, q, key)
		return seed.ProfileResult{}, errLost
	}
	return v.Vendor.Profile(ctx, q, key)
}

func (v *billedAndLost) Email(ctx context.Context, profileURL, key string) (seed.EmailResult, error) {
	if v.first(key) {
		_, _ = v.Vendor.Email(ctx, profileURL, key)
		return seed.EmailResult{}, errLost
	}
	return v.Vendor.Email(ctx, profileURL, key)
}

// A vendor that prices by outcome and charges its misses (a profile
// no-match 1 and a match 2, an email miss 5 and a hit 10), inside the
// contract's ranges, unlike the cost table (a profile search 2 either way,
// an email miss 0). Its first answers teach the price list, per vendor key;
// then a lost no-match is settled by its replay at 1 and a lost email miss
// at 5: the ledger is the bill, to the credit.
func TestLostAnswersSettledAtTheLearnedPrice(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true, Vendor: func(o *enrichtest.SeedOptions) {
		o.Prices = enrichtest.SeedChargedMissPrices()
		o.NoReplayHeader = true
	}})
	b.Submitter.Enqueuer = nil
	ctx := context.Background()
	account := fmt.Sprintf("acct-prices-%d", time.Now().UnixNano())
	book := enrich.NewPriceBook(enrich.DefaultCosts(), nil)
	cfg := jobs.ProcessorConfig{Now: func() time.Time { return time.Now().Add(-time.Hour) }}
	vc := jobstest.SeedVendor(b.Client, noLimit{}, "")
	vc.Account, vc.Prices = account, book
	opts := ingest.JobOptions{Roles: []string{"CFO"}, Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}}

	// The first answers: every one read.
	first := b.Submit(t, jobstest.NamedCompanies("first", 30), opts)
	runRounds(t, b, jobs.NewProcessor(b.Store, []jobs.VendorConfig{vc}, cfg, b.Log), first.ID, 2)
	list, err := b.Store.VendorPrices(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, p := range list {
		got[p.Class] = p.Credits
		if p.Answers < 1 || p.Highest != p.Credits || p.Previous != nil {
			t.Errorf("%s: %+v", p.Class, p)
		}
	}
	t.Logf("learned: %v", got)
	for class, want := range map[string]int64{"profile/name_company/no_match": 1, "profile/name_company/match": 2, "email/miss": 5, "email/hit": 10} {
		if p, ok := got[class]; !ok || p != want {
			t.Errorf("learned price of %s = %d (known %v), want %d", class, p, ok, want)
		}
	}
	b.CheckMoney(t, first.ID)

	// Then every answer lost after the vendor billed it: each retry is a
	// replay (no header: charged 0), and prices the lost send. A worker
	// that starts afresh reads the learned list from Postgres.
	billed := b.Vendor.TotalCharged()
	lost := b.Submit(t, jobstest.NamedCompanies("lost", 30), opts)
	v := &billedAndLost{Vendor: b.Client, seen: map[string]bool{}}
	vc = jobstest.SeedVendor(v, noLimit{}, "")
	vc.Account = account
	runRounds(t, b, jobs.NewProcessor(b.Store, []jobs.VendorConfig{vc}, cfg, b.Log), lost.ID, 5)
	j, err := b.Store.JobByID(ctx, lost.ID)
	if err != nil || j.State != domain.JobCompleted {
		t.Fatalf("job %s, %v", j.State, err)
	}
	entries, err := b.Store.LedgerEntries(ctx, lost.ID)
	if err != nil {
		t.Fatal(err)
	}
	settledAt := map[int64]int{}
	for _, e := range entries {
		if strings.HasPrefix(e.Error, "reconciled by call") {
			settledAt[e.Charged]++
		}
	}
	t.Logf("lost sends settled by their replay, by price: %v; the vendor billed %d for the job", settledAt, b.Vendor.TotalCharged()-billed)
	if settledAt[1] == 0 || settledAt[5] == 0 {
		t.Errorf("want lost no-matches settled at 1 and lost email misses at 5; got %v", settledAt)
	}
	b.CheckMoney(t, first.ID, lost.ID)
}

// The price book: the cost table until the vendor shows a price, then the
// vendor's once PriceAgreement answers in a row agree; a price that
// changes is news only then; an answer beyond the contract teaches
// nothing; a reservation never holds less than the most the vendor has
// charged for a class within the contract.
func TestPriceBook(t *testing.T) {
	t.Parallel()
	book := enrich.NewPriceBook(enrich.DefaultCosts(), nil)
	now := time.Now()
	learn := func(c enrich.PriceClass, credits int64) {
		for range enrich.PriceAgreement {
			book.Observe(c, credits, now)
		}
	}
	miss := enrich.EmailClass(nil)
	if p, known := book.Price(miss); p != 0 || known {
		t.Fatalf("email miss before any answer: %d (known %v), want the table's 0", p, known)
	}
	for i := range enrich.PriceAgreement {
		news, _ := book.Observe(miss, 5, now)
		if last := i == enrich.PriceAgreement-1; news != last {
			t.Fatalf("answer %d of a first price: news %v, want %v (news once %d agree)", i+1, news, last, enrich.PriceAgreement)
		}
	}
	if news, _ := book.Observe(miss, 5, now); news {
		t.Fatal("an agreeing answer is news")
	}
	if p, known := book.Price(miss); p != 5 || !known {
		t.Fatalf("email miss after answers: %d (known %v), want 5", p, known)
	}
	hit := enrich.EmailClass(&enrich.Email{Address: "a@b.example"})
	learn(hit, 12) // above the contract's most for an email (10)
	if p, known := book.Price(hit); known || book.Worst(domain.StageEmail) != 10 {
		t.Fatalf("answers beyond the contract: price %d (known %v), worst %d; want nothing learned, worst 10", p, known, book.Worst(domain.StageEmail))
	}
	learn(hit, 10)
	// One answer, or answers that do not agree, move no price.
	for _, c := range []int64{8, 9, 8} {
		if news, _ := book.Observe(hit, c, now); news {
			t.Fatalf("a price changed by answers that do not agree (%d)", c)
		}
	}
	if p, _ := book.Price(hit); p != 10 {
		t.Fatalf("email hit = %d after answers that do not agree, want still 10", p)
	}
	book.Observe(hit, 8, now)
	news, prev := book.Observe(hit, 8, now)
	if !news || prev == nil || *prev != 10 {
		t.Fatalf("a changed price, %d answers agreeing: news %v, prev %v", enrich.PriceAgreement, news, prev)
	}
	if w := book.Worst(domain.StageEmail); w != 10 {
		t.Fatalf("worst email after a cut = %d, want still 10", w)
	}
	l := book.Learned()
	if len(l) != 2 || l[1].Class != hit || l[1].Credits != 8 || l[1].Highest != 10 || l[1].Previous == nil || *l[1].Previous != 10 {
		t.Fatalf("learned = %+v", l)
	}
	// A list learned by an older version from an untrue charge is held to the contract.
	poisoned := enrich.NewPriceBook(enrich.DefaultCosts(), []enrich.LearnedPrice{
		{Class: miss, Credits: 5, Highest: 1_000_000_000, Answers: 1},
		{Class: hit, Credits: 1_000_000_000, Highest: 1_000_000_000, Answers: 1},
	})
	if w := poisoned.Worst(domain.StageEmail); w != 10 {
		t.Fatalf("worst email of a poisoned list = %d, want the contract's 10", w)
	}

	// A bulk call's total: one class without a price is solved.
	nm := enrich.ProfileClass(domain.InputNameCompany, false)
	m := enrich.ProfileClass(domain.InputNameCompany, true)
	learn(m, 2)
	solved := book.SolveBulk(map[enrich.PriceClass]int64{m: 3, nm: 4, miss: 3}, 3*2+4*1+3*5)
	if len(solved) != 1 || solved[nm] != 1 {
		t.Fatalf("solve: %v, want %v 1", solved, nm)
	}
	learn(nm, 1) // what the processor does with it
	// Two classes unknown: one call tells nothing; a second, independent,
	// determines both (phone miss 5, mobile 25).
	pm, pmob := enrich.PhoneClass(nil), enrich.PhoneClass(&enrich.Phones{Numbers: []enrich.Phone{{Number: "+1", Type: "mobile"}}})
	if solved := book.SolveBulk(map[enrich.PriceClass]int64{m: 2, pm: 1, pmob: 1}, 2*2+5+25); len(solved) != 0 {
		t.Fatalf("two unknown classes solved from one call: %v", solved)
	}
	if solved := book.SolveBulk(map[enrich.PriceClass]int64{m: 1, pm: 3, pmob: 1}, 2+3*5+25); len(solved) != 2 || solved[pm] != 5 || solved[pmob] != 25 {
		t.Fatalf("two calls: %v, want phone miss 5, mobile 25", solved)
	}
	learn(pm, 5)
	learn(pmob, 25)
	// Equations that allow no whole price teach nothing.
	ph := enrich.PhoneClass(&enrich.Phones{Numbers: []enrich.Phone{{Number: "+1"}}})
	if solved := book.SolveBulk(map[enrich.PriceClass]int64{ph: 2}, 7); len(solved) != 0 {
		t.Fatalf("a price of 3.5 learned: %v", solved)
	}
	for _, c := range enrich.PriceClasses() {
		back, err := enrich.ParsePriceClass(c.String())
		if err != nil || back != c {
			t.Fatalf("%v: parsed back %v, %v", c, back, err)
		}
	}
	if _, err := enrich.ParsePriceClass("profile/member/match"); err == nil {
		t.Fatal("a member lookup is not a vendor price class")
	}
}

// The learned list is per vendor key in Postgres: a new price is recorded
// once, agreeing answers are counted, a change keeps the old price.
func TestVendorPricesStored(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true})
	ctx := context.Background()
	account := fmt.Sprintf("acct-store-%d", time.Now().UnixNano())
	l, err := b.Store.LearnPrice(ctx, account, "email/miss", 5, 1)
	if err != nil || !l.New {
		t.Fatalf("first: %+v, %v", l, err)
	}
	if err := b.Store.AgreePrices(ctx, account, []store.PriceAgreement{{Class: "email/miss", Credits: 5, Answers: 3}, {Class: "email/miss", Credits: 4, Answers: 9}}); err != nil {
		t.Fatal(err)
	}
	if l, err = b.Store.LearnPrice(ctx, account, "email/miss", 6, 2); err != nil || !l.Changed || l.Prev != 5 {
		t.Fatalf("change: %+v, %v", l, err)
	}
	list, err := b.Store.VendorPrices(ctx, account)
	if err != nil || len(list) != 1 {
		t.Fatalf("list %+v, %v", list, err)
	}
	p := list[0]
	if p.Credits != 6 || p.Highest != 6 || p.Answers != 1 || p.Previous == nil || *p.Previous != 5 || p.ChangedAt == nil {
		t.Fatalf("after a change: %+v", p)
	}
	if other, err := b.Store.VendorPrices(ctx, account+"-other"); err != nil || len(other) != 0 {
		t.Fatalf("another key's list: %+v, %v", other, err)
	}
}

// losesOnce does the work of the first send of the keys lose picks (the
// vendor bills it) and loses its answer.
type losesOnce struct {
	Vendor
	lose func(q enrich.ProfileQuery) bool
	mu   sync.Mutex
	seen map[string]bool
}

func (v *losesOnce) Profile(ctx context.Context, q enrich.ProfileQuery, key string) (seed.ProfileResult, error) {
	v.mu.Lock()
	first := !v.seen[key]
	v.seen[key] = true
	v.mu.Unlock()
	if first && v.lose(q) {
		_, _ = v.Vendor.Profile(ctx, q, key)
		return seed.ProfileResult{}, errLost
	}
	return v.Vendor.Profile(ctx, q, key)
}

// A lost no-match whose price the vendor has not shown yet is settled by
// its replay at the cost table's guess (a search: 2); the vendor's balance
// readings around it (the answer read before it left, and its replay) show
// it cost 1, and it alone can have been billed in between: the witness
// settles it to 1, marked, before the job completes.
func TestWitnessSettlesWhatTheReadingsPin(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true, Vendor: func(o *enrichtest.SeedOptions) {
		o.Prices = enrichtest.SeedChargedMissPrices()
		o.NoReplayHeader = true
	}})
	b.Submitter.Enqueuer = nil
	ctx := context.Background()
	var hit, miss string
	for i := 0; hit == "" || miss == ""; i++ {
		c := fmt.Sprintf("Witness Company %d GmbH", i)
		if b.Vendor.ProfileHit(enrich.ProfileQuery{Name: "CFO", Company: c}) {
			hit = cmp.Or(hit, c)
		} else {
			miss = cmp.Or(miss, c)
		}
	}
	job := b.Submit(t, []ingest.RowIn{{Ref: "hit", Company: hit}, {Ref: "miss", Company: miss}}, ingest.JobOptions{Roles: []string{"CFO"}})
	v := &losesOnce{Vendor: b.Client, seen: map[string]bool{}, lose: func(q enrich.ProfileQuery) bool { return q.Company == miss }}
	vc := jobstest.SeedVendor(v, noLimit{}, "")
	vc.Account = fmt.Sprintf("acct-witness-%d", time.Now().UnixNano())
	proc := jobs.NewProcessor(b.Store, []jobs.VendorConfig{vc}, jobs.ProcessorConfig{
		LookupConcurrency: 1, Now: func() time.Time { return time.Now().Add(-time.Hour) }}, b.Log)
	runRounds(t, b, proc, job.ID, 3)
	j, err := b.Store.JobByID(ctx, job.ID)
	if err != nil || j.State != domain.JobCompleted {
		t.Fatalf("job %s, %v", j.State, err)
	}
	entries, err := b.Store.LedgerEntries(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	witnessed := 0
	for _, e := range entries {
		t.Logf("call %d %s charged %d: %s", e.ID, e.Status, e.Charged, e.Error)
		if strings.HasPrefix(e.Error, "settled by the balance witness") {
			witnessed++
			if e.Charged != 1 {
				t.Errorf("witnessed at %d, want 1", e.Charged)
			}
		}
	}
	if witnessed != 1 {
		t.Errorf("%d calls settled by the witness, want the lost no-match", witnessed)
	}
	b.CheckMoney(t, job.ID)
}

// Bulk calls report only their total: their rows' classes, over several
// calls, are solved together for the prices they determine.
func TestBulkCallsTeachPrices(t *testing.T) {
	t.Parallel()
	b := jobstest.New(t, jobstest.Options{NoWorker: true, Vendor: func(o *enrichtest.SeedOptions) { o.Prices = enrichtest.SeedChargedMissPrices() }})
	b.Submitter.Enqueuer = nil
	ctx := context.Background()
	account := fmt.Sprintf("acct-bulk-%d", time.Now().UnixNano())
	vc := jobstest.SeedVendor(b.Client, noLimit{}, "")
	vc.Account = account
	proc := jobs.NewProcessor(b.Store, []jobs.VendorConfig{vc}, jobs.ProcessorConfig{Bulk: true, BulkSize: 4}, b.Log)
	// Profiles alone: a match and a no-match are told apart. Then with
	// email: a matched row is billed its profile and its email together,
	// told apart now that the match is priced.
	profiles := b.Submit(t, jobstest.NamedCompanies("bulkp", 40), ingest.JobOptions{Roles: []string{"CFO"}})
	runRounds(t, b, proc, profiles.ID, 2)
	job := b.Submit(t, jobstest.NamedCompanies("bulk", 60), ingest.JobOptions{Roles: []string{"CFO"}, Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}})
	runRounds(t, b, proc, job.ID, 2)
	list, err := b.Store.VendorPrices(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, p := range list {
		got[p.Class] = p.Credits
	}
	t.Logf("learned from bulk totals: %v", got)
	for class, want := range map[string]int64{"profile/name_company/no_match": 1, "profile/name_company/match": 2, "email/miss": 5, "email/hit": 10} {
		if p, ok := got[class]; !ok || p != want {
			t.Errorf("learned price of %s = %d (known %v), want %d", class, p, ok, want)
		}
	}
	b.CheckMoney(t, profiles.ID, job.ID)
}
