package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

func TestAccountAllowanceHoldsAcrossJobs(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	a := createJob(t, st, store.NewJob{}, 1)
	b := createJob(t, st, store.NewJob{}, 1)
	allowance := int64(50)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var granted []int64
	for i := range 30 {
		job := a.ID
		if i%2 == 1 {
			job = b.ID
		}
		wg.Go(func() {
			id, err := st.Reserve(ctx, store.Reservation{JobID: job, Stage: domain.StageEmail, Endpoint: "/v1/email", IdempotencyKey: "k",
				Credits: 10, TTL: time.Minute, Account: "acct1", Allowance: &allowance})
			var be *store.BudgetError
			if errors.As(err, &be) {
				if be.Scope != "account" {
					t.Errorf("scope %q, want account", be.Scope)
				}
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			granted = append(granted, id)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(granted) != 5 {
		t.Fatalf("%d reservations of 10 granted under an allowance of 50, want 5", len(granted))
	}
	for _, id := range granted {
		if err := st.Settle(ctx, id, store.Settlement{Charged: 5, Reported: true}); err != nil {
			t.Fatal(err)
		}
	}
	u, err := st.AccountMonth(ctx, "acct1", time.Now())
	if err != nil || u.Spent != 25 || u.Reserved != 0 || u.Calls != 5 {
		t.Fatalf("usage = %+v (%v), want 25 spent over 5 calls", u, err)
	}
	// A failed reservation of the job leaves the account untouched.
	small := int64(0)
	c := createJob(t, st, store.NewJob{BudgetCredits: &small}, 1)
	if _, err := st.Reserve(ctx, store.Reservation{JobID: c.ID, Stage: domain.StageEmail, Endpoint: "/v1/email", IdempotencyKey: "k",
		Credits: 10, TTL: time.Minute, Account: "acct1", Allowance: &allowance}); !errors.Is(err, store.ErrBudgetExhausted) {
		t.Fatalf("err = %v", err)
	}
	if u2, _ := st.AccountMonth(ctx, "acct1", time.Now()); u2.Reserved != 0 {
		t.Fatalf("a refused job reservation left %d reserved on the account", u2.Reserved)
	}
}

func TestLookupClaimsAreExclusive(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	keys := []string{"a", "b", "c"}
	won1, err := st.ClaimLookups(ctx, "acme", domain.StageProfile, keys, "00000000-0000-0000-0000-000000000001", time.Minute)
	if err != nil || len(won1) != 3 {
		t.Fatalf("first claim won %v (%v)", won1, err)
	}
	won2, err := st.ClaimLookups(ctx, "acme", domain.StageProfile, []string{"c", "d"}, "00000000-0000-0000-0000-000000000002", time.Minute)
	if err != nil || len(won2) != 1 || won2[0] != "d" {
		t.Fatalf("second claim won %v (%v), want only d", won2, err)
	}
	if err := st.ReleaseLookups(ctx, "00000000-0000-0000-0000-000000000001"); err != nil {
		t.Fatal(err)
	}
	won3, err := st.ClaimLookups(ctx, "acme", domain.StageProfile, []string{"c"}, "00000000-0000-0000-0000-000000000002", time.Minute)
	if err != nil || len(won3) != 1 {
		t.Fatalf("after release: won %v (%v)", won3, err)
	}
	// An expired claim is taken over.
	if _, err := st.ClaimLookups(ctx, "acme", domain.StageEmail, []string{"x"}, "00000000-0000-0000-0000-000000000003", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := store.PoolForTest(st).Exec(ctx, `UPDATE lookup_claims SET expires_at = now() - interval '1 second' WHERE input_key = 'x'`); err != nil {
		t.Fatal(err)
	}
	won4, err := st.ClaimLookups(ctx, "acme", domain.StageEmail, []string{"x"}, "00000000-0000-0000-0000-000000000004", time.Minute)
	if err != nil || len(won4) != 1 {
		t.Fatalf("expired claim not taken over: %v (%v)", won4, err)
	}
}

// Reservations and settlements of two jobs on one account, interleaved by
// many goroutines: they lock the job's row and the account's in one order,
// so Postgres never has a deadlock to break, and every credit adds up.
func TestReserveAndSettleNeverDeadlock(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	jobs := []string{createJob(t, st, store.NewJob{}, 1).ID, createJob(t, st, store.NewJob{}, 1).ID}
	const workers, calls = 12, 30
	var wg sync.WaitGroup
	var mu sync.Mutex
	spent := map[string]int64{}
	for w := range workers {
		wg.Go(func() {
			job := jobs[w%2]
			for i := range calls {
				id, err := st.Reserve(ctx, store.Reservation{JobID: job, Stage: domain.StageEmail, Endpoint: "/v1/email",
					IdempotencyKey: "k", Credits: 10, TTL: time.Minute, Account: "acct-deadlock"})
				if err != nil {
					t.Error(err)
					return
				}
				var charged int64
				switch i % 3 {
				case 0:
					charged = 7
					err = st.Settle(ctx, id, store.Settlement{Charged: charged, Reported: true})
				case 1:
					err = st.Release(ctx, id, "never sent")
				default: // unknown first (counted at 10), then the vendor's answer corrects it
					if err = st.MarkUnknown(ctx, id, "timeout"); err == nil {
						charged = 5
						err = st.Settle(ctx, id, store.Settlement{Charged: charged, Reported: true})
					}
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				spent[job] += charged
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if n := st.Conflicts(); n != 0 {
		t.Errorf("Postgres broke %d deadlocks or serialization conflicts; want none (one lock order)", n)
	}
	var total int64
	for _, id := range jobs {
		j, err := st.JobByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.CreditsSpent != spent[id] || j.CreditsReserved != 0 {
			t.Errorf("job %s: spent %d reserved %d, want spent %d reserved 0", id, j.CreditsSpent, j.CreditsReserved, spent[id])
		}
		total += spent[id]
	}
	u, err := st.AccountMonth(ctx, "acct-deadlock", time.Now())
	if err != nil || u.Spent != total || u.Reserved != 0 {
		t.Fatalf("account usage %+v (%v), want spent %d reserved 0", u, err, total)
	}
}

// A replayed answer settles the earlier sends of its Idempotency-Key that
// were counted at their reservation: the oldest at the replayed answer's
// price, the rest at 0; and all at 0 when one of them was already settled.
func TestReconcileReplay(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	reserve := func(job, key string) int64 {
		t.Helper()
		id, err := st.Reserve(ctx, store.Reservation{JobID: job, Stage: domain.StageBulk, Endpoint: "/v1/bulk", IdempotencyKey: key,
			Credits: 100, TTL: time.Minute, Account: "acct-replay"})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	job := createJob(t, st, store.NewJob{}, 1).ID
	lost := reserve(job, "K") // the worker was killed: expired, counted at 100
	reserve(job, "K")         // a second send whose answer was lost too, still reserved
	if err := st.MarkUnknown(ctx, lost, "reservation expired"); err != nil {
		t.Fatal(err)
	}
	other := reserve(job, "other") // another key: left alone
	replay := reserve(job, "K")
	if err := st.Settle(ctx, replay, store.Settlement{Charged: 0, Reported: true}); err != nil {
		t.Fatal(err)
	}
	n, self, err := st.ReconcileReplay(ctx, job, "K", replay, 37, true)
	if err != nil || n != 2 || self {
		t.Fatalf("reconciled %d (self %v, %v), want 2, not self", n, self, err)
	}
	j, err := st.JobByID(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if j.CreditsSpent != 37 || j.CreditsReserved != 100 { // 100: "other", still open
		t.Fatalf("job spent %d reserved %d, want 37 and 100", j.CreditsSpent, j.CreditsReserved)
	}
	if u, _ := st.AccountMonth(ctx, "acct-replay", time.Now()); u.Spent != 37 || u.Reserved != 100 {
		t.Fatalf("account %+v, want spent 37 reserved 100", u)
	}
	if err := st.Release(ctx, other, "test"); err != nil {
		t.Fatal(err)
	}

	// A second job: the first send was answered and settled; an unknown
	// re-send is then counted at 0 by the replay.
	job2 := createJob(t, st, store.NewJob{}, 1).ID
	first := reserve(job2, "K")
	if err := st.Settle(ctx, first, store.Settlement{Charged: 12, Reported: true}); err != nil {
		t.Fatal(err)
	}
	unknown := reserve(job2, "K")
	if err := st.MarkUnknown(ctx, unknown, "timeout"); err != nil {
		t.Fatal(err)
	}
	replay2 := reserve(job2, "K")
	if err := st.Settle(ctx, replay2, store.Settlement{Charged: 0, Reported: true}); err != nil {
		t.Fatal(err)
	}
	if n, self, err := st.ReconcileReplay(ctx, job2, "K", replay2, 12, true); err != nil || n != 1 || self {
		t.Fatalf("reconciled %d (self %v, %v), want 1, not self", n, self, err)
	}
	if j, _ := st.JobByID(ctx, job2); j.CreditsSpent != 12 || j.CreditsReserved != 0 {
		t.Fatalf("job 2 spent %d reserved %d, want 12 and 0", j.CreditsSpent, j.CreditsReserved)
	}

	// A call sent twice by http.Transport and answered as a replay, with no
	// earlier send of its key: its own first send was billed.
	job3 := createJob(t, st, store.NewJob{}, 1).ID
	only := reserve(job3, "K")
	if n, self, err := st.ReconcileReplay(ctx, job3, "K", only, 12, true); err != nil || n != 0 || !self {
		t.Fatalf("reconciled %d (self %v, %v), want 0 and self", n, self, err)
	}
	if _, self, _ := st.ReconcileReplay(ctx, job3, "K", only, 12, false); self {
		t.Fatal("a replay sent once, with no earlier send, charged to itself")
	}
}

// SaveOutcomes gives up the lookup claims of its token with the answers it
// saves (one transaction), and nobody else's.
func TestSaveOutcomesGivesUpTheTokensLookupClaims(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	other := "00000000-0000-0000-0000-0000000000aa"
	claim := claimChunkAndLookups(t, st, other, time.Minute)
	now := time.Now()
	outs := []store.Outcome{
		{RowID: claim.Rows[0].ID, NoMatches: []domain.Stage{domain.StageProfile}, StagesDone: []domain.Stage{domain.StageProfile}, State: domain.RowNoMatch, Prov: store.Provenance{FetchedAt: now}},
		{RowID: claim.Rows[1].ID, NoMatches: []domain.Stage{domain.StageProfile}, StagesDone: []domain.Stage{domain.StageProfile}, State: domain.RowNoMatch, Prov: store.Provenance{FetchedAt: now}},
	}
	cache := []store.CacheEntry{{RowID: claim.Rows[0].ID, Stage: domain.StageProfile, Key: "k0", FetchedAt: now},
		{RowID: claim.Rows[1].ID, Stage: domain.StageProfile, Key: "k1", FetchedAt: now}}
	if ids, err := st.SaveOutcomes(ctx, "acme", claim.Token, outs, cache); err != nil || len(ids) != 2 {
		t.Fatalf("save: %v, %v", ids, err)
	}
	var mine, others int
	if err := store.PoolForTest(st).QueryRow(ctx, `SELECT count(*) FILTER (WHERE token = $1), count(*) FILTER (WHERE token <> $1) FROM lookup_claims`,
		claim.Token).Scan(&mine, &others); err != nil {
		t.Fatal(err)
	}
	if mine != 0 || others != 1 {
		t.Fatalf("after the save: %d claims of the token left (want 0), %d of another (want 1)", mine, others)
	}
	// The inputs are free to claim again, and found in the cache.
	if won, err := st.ClaimLookups(ctx, "acme", domain.StageProfile, []string{"k0", "k1", "k2"}, other, time.Minute); err != nil || len(won) != 3 {
		t.Fatalf("claims after the save: %v, %v", won, err)
	}
	if hits, err := st.CachedAnswers(ctx, "acme", domain.StageProfile, []string{"k0", "k1"}, now.Add(-time.Minute)); err != nil || len(hits) != 2 {
		t.Fatalf("cache after the save: %v, %v", hits, err)
	}
}

// The heartbeat's ExtendLease keeps the token's lookup claims alive with its
// rows (nobody takes them over while it works), and only the token's.
func TestExtendLeaseExtendsTheTokensLookupClaims(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	claim := claimChunkAndLookups(t, st, "00000000-0000-0000-0000-0000000000bb", time.Millisecond)
	// Both tokens' claims have run out; the heartbeat comes for the first.
	if _, err := store.PoolForTest(st).Exec(ctx, `UPDATE lookup_claims SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if err := st.ExtendLease(ctx, claim.Token, claim.IDs(), time.Minute, time.Minute); err != nil {
		t.Fatal(err)
	}
	late := "00000000-0000-0000-0000-0000000000cc"
	won, err := st.ClaimLookups(ctx, "acme", domain.StageProfile, []string{"k0", "k1", "k2"}, late, time.Minute)
	if err != nil || len(won) != 1 || won[0] != "k2" {
		t.Fatalf("a late claim won %v (%v): want only k2, the claim nobody extended", won, err)
	}
}

// claimChunkAndLookups claims the one chunk of a new two-row job, then the
// lookups k0 and k1 (tenant acme, stage profile) under its token and k2
// under other, each claim for ttl.
func claimChunkAndLookups(t *testing.T, st *store.Store, other string, ttl time.Duration) store.Claim {
	t.Helper()
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{}, 2)
	claim, err := st.ClaimChunk(ctx, job.ID, 0, time.Minute)
	if err != nil || len(claim.Rows) != 2 {
		t.Fatalf("claim: %d rows, %v", len(claim.Rows), err)
	}
	if won, err := st.ClaimLookups(ctx, "acme", domain.StageProfile, []string{"k0", "k1"}, claim.Token, ttl); err != nil || len(won) != 2 {
		t.Fatalf("claims: %v, %v", won, err)
	}
	if won, err := st.ClaimLookups(ctx, "acme", domain.StageProfile, []string{"k2"}, other, ttl); err != nil || len(won) != 1 {
		t.Fatalf("other claims: %v, %v", won, err)
	}
	return claim
}
