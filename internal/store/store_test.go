package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

func ptr[T any](v T) *T { return &v }

func createJob(t *testing.T, st *store.Store, nj store.NewJob, n int) store.Job {
	t.Helper()
	if nj.Tenant == "" {
		nj.Tenant = "acme"
	}
	if nj.Lookups == nil {
		nj.Lookups = []domain.Stage{domain.StageProfile}
	}
	if nj.ChunkSize == 0 {
		nj.ChunkSize = 10
	}
	job, created, err := st.CreateJob(context.Background(), nj, func(add func(store.NewRow) error) error {
		for i := range n {
			if err := add(store.NewRow{InputRow: i + 1, Ref: fmt.Sprint("r", i), Kind: domain.InputNameCompany, Name: "VP Sales", Company: fmt.Sprint("Co ", i),
				Extra: map[string]string{"crm": "x"}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || !created {
		t.Fatalf("CreateJob: created=%v err=%v", created, err)
	}
	return job
}

func TestCreateJobIdempotentAndAtomic(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{IdempotencyKey: "k1"}, 25)
	if job.TotalRows != 25 || job.ChunkCount != 3 || job.State != domain.JobQueued {
		t.Fatalf("job = %+v", job)
	}
	// The same rows under the key: the first job (the feed is read to compare, nothing stored).
	feed := func(n int, company string) func(add func(store.NewRow) error) error {
		return func(add func(store.NewRow) error) error {
			for i := range n {
				if err := add(store.NewRow{InputRow: i + 1, Ref: fmt.Sprint("r", i), Kind: domain.InputNameCompany, Name: "VP Sales",
					Company: fmt.Sprint(company, i), Extra: map[string]string{"crm": "x"}}); err != nil {
					return err
				}
			}
			return nil
		}
	}
	again, created, err := st.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 10, IdempotencyKey: "k1"},
		feed(25, "Co "))
	if err != nil || created || again.ID != job.ID {
		t.Fatalf("replay: id=%s created=%v err=%v, want %s", again.ID, created, err, job.ID)
	}
	// Other rows, or other options, under the key: refused.
	if _, _, err := st.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 10, IdempotencyKey: "k1"},
		feed(25, "Other ")); !errors.Is(err, store.ErrIdempotencyKeyReused) {
		t.Fatalf("other rows under the key: %v", err)
	}
	if _, _, err := st.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 10, IdempotencyKey: "k1",
		RequestOptions: []byte(`{"budget": 5}`)}, feed(25, "Co ")); !errors.Is(err, store.ErrIdempotencyKeyReused) {
		t.Fatalf("other options under the key: %v", err)
	}
	// Another tenant with the same key gets its own job.
	other := createJob(t, st, store.NewJob{Tenant: "beta", IdempotencyKey: "k1"}, 1)
	if other.ID == job.ID {
		t.Fatal("tenants share idempotency keys")
	}
	if _, err := st.GetJob(ctx, "beta", job.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("other tenant's job: err = %v, want ErrNotFound", err)
	}
	// A feed that fails stores nothing.
	boom := errors.New("row 7 is bad")
	_, _, err = st.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 10, IdempotencyKey: "k2"},
		func(add func(store.NewRow) error) error {
			for i := range 6000 { // more than one COPY batch
				if err := add(store.NewRow{InputRow: i + 1, Kind: domain.InputEmail, Email: "a@b.c"}); err != nil {
					return err
				}
			}
			return boom
		})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	var jobs, rows int
	if err := store.PoolForTest(st).QueryRow(ctx, `SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM job_rows)`).Scan(&jobs, &rows); err != nil {
		t.Fatal(err)
	}
	if jobs != 2 || rows != 26 {
		t.Fatalf("after a failed feed: %d jobs, %d rows; want 2 and 26", jobs, rows)
	}
}

func TestClaimIsExclusive(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{}, 10)
	var wg sync.WaitGroup
	claims := make([]store.Claim, 8)
	for i := range claims {
		wg.Go(func() {
			c, err := st.ClaimChunk(ctx, job.ID, 0, time.Minute)
			if err != nil {
				t.Error(err)
			}
			claims[i] = c
		})
	}
	wg.Wait()
	total := 0
	for _, c := range claims {
		total += len(c.Rows)
	}
	if total != 10 {
		t.Fatalf("claimed %d rows in all, want exactly 10", total)
	}
}

func TestOutcomesGuardedByLease(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{}, 2)
	c, err := st.ClaimChunk(ctx, job.ID, 0, time.Minute)
	if err != nil || len(c.Rows) != 2 {
		t.Fatalf("claim: %v %d", err, len(c.Rows))
	}
	now := time.Now()
	outs := []store.Outcome{
		{RowID: c.Rows[0].ID, Profile: &store.ProfileResult{ProfileURL: "https://platform.example/in/a", Name: "A", Raw: []byte(`{"x":1}`)},
			StagesDone: []domain.Stage{domain.StageProfile}, State: domain.RowMatched, Prov: store.Provenance{FetchedAt: now}},
		{RowID: c.Rows[1].ID, NoMatches: []domain.Stage{domain.StageProfile}, StagesDone: []domain.Stage{domain.StageProfile}, State: domain.RowNoMatch, Prov: store.Provenance{FetchedAt: now}},
	}
	// A stale token writes nothing.
	if ids, err := st.SaveOutcomes(ctx, "acme", "00000000-0000-0000-0000-000000000000", outs, nil); err != nil || len(ids) != 0 {
		t.Fatalf("stale token wrote %v (err %v)", ids, err)
	}
	ids, err := st.SaveOutcomes(ctx, "acme", c.Token, outs, []store.CacheEntry{{RowID: c.Rows[0].ID, Stage: domain.StageProfile, Key: "k", Matched: true, Result: []byte(`{}`), FetchedAt: now}})
	if err != nil || len(ids) != 2 {
		t.Fatalf("save: %v %v", ids, err)
	}
	res, err := st.ListResults(ctx, job.ID, "", 0, 10)
	if err != nil || len(res) != 2 {
		t.Fatalf("results: %v %d", err, len(res))
	}
	if res[0].Profile == nil || res[0].Profile.Name != "A" || res[0].Extra["crm"] != "x" {
		t.Fatalf("result 0 = %+v", res[0])
	}
	if res[1].State != domain.RowNoMatch || len(res[1].NoMatches) != 1 {
		t.Fatalf("result 1 = %+v", res[1])
	}
	done, err := st.FinishJobs(ctx, job.ID)
	if err != nil || len(done) != 1 || done[0].State != domain.JobCompleted {
		t.Fatalf("finish: %v %+v", err, done)
	}
	cached, err := st.CachedAnswers(ctx, "acme", domain.StageProfile, []string{"k", "missing"}, now.Add(-time.Hour))
	if err != nil || len(cached) != 1 || !cached["k"].Matched {
		t.Fatalf("cache: %v %+v", err, cached)
	}
}

func TestReserveNeverExceedsBudget(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{BudgetCredits: ptr[int64](100)}, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var granted []int64
	for range 40 {
		wg.Go(func() {
			id, err := st.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: domain.StageProfile, Endpoint: "/v1/profile", IdempotencyKey: "k", Credits: 7, TTL: time.Minute})
			if err != nil {
				if !errors.Is(err, store.ErrBudgetExhausted) {
					t.Error(err)
				}
				return
			}
			mu.Lock()
			granted = append(granted, id)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(granted) != 14 { // 14*7 = 98 <= 100 < 105
		t.Fatalf("granted %d reservations of 7 in a budget of 100, want 14", len(granted))
	}
	// Settle half at 2, release one, mark one unknown, then settle it (correction).
	for _, id := range granted[:7] {
		if err := st.Settle(ctx, id, store.Settlement{Charged: 2, Reported: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Release(ctx, granted[7], "never sent"); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkUnknown(ctx, granted[8], "timeout"); err != nil {
		t.Fatal(err)
	}
	j, _ := st.JobByID(ctx, job.ID)
	if j.CreditsSpent != 14+7 || j.CreditsReserved != 5*7 {
		t.Fatalf("spent %d reserved %d, want 21 and 35", j.CreditsSpent, j.CreditsReserved)
	}
	if err := st.Settle(ctx, granted[8], store.Settlement{Charged: 1, Reported: true}); err != nil {
		t.Fatal(err)
	}
	j, _ = st.JobByID(ctx, job.ID)
	if j.CreditsSpent != 15 {
		t.Fatalf("after correcting an unknown call: spent %d, want 15", j.CreditsSpent)
	}
	led, err := st.JobLedger(ctx, job.ID)
	if err != nil || led.Charged != j.CreditsSpent || led.Reserved != j.CreditsReserved {
		t.Fatalf("ledger %+v disagrees with job spent %d reserved %d (err %v)", led, j.CreditsSpent, j.CreditsReserved, err)
	}
}

func TestCancelSkipsUnclaimedRows(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{}, 20)
	c, err := st.ClaimChunk(ctx, job.ID, 0, time.Minute)
	if err != nil || len(c.Rows) != 10 {
		t.Fatal(err)
	}
	j, err := st.CancelJob(ctx, "acme", job.ID)
	if err != nil || j.State != domain.JobCanceled || j.FinishedAt != nil {
		t.Fatalf("cancel: %v %+v", err, j)
	}
	counts, _ := st.RowCounts(ctx, job.ID)
	if counts[domain.RowSkipped] != 10 || counts[domain.RowInFlight] != 10 {
		t.Fatalf("counts = %v", counts)
	}
	if c2, _ := st.ClaimChunk(ctx, job.ID, 1, time.Minute); len(c2.Rows) != 0 {
		t.Fatal("claimed rows of a canceled job")
	}
}

// A database that cannot be reached is ErrUnavailable (the API answers 503,
// workers try again), not an error of the query.
func TestUnreachableDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	st := storetest.Unreachable(t)
	_, err := st.JobByID(context.Background(), "00000000-0000-0000-0000-000000000001")
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}
