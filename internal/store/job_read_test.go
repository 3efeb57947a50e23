package store_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// countRows counts a job's rows by state the slow way, for comparison.
func countRows(t *testing.T, st *store.Store, jobID string) map[domain.RowState]int {
	t.Helper()
	counts := map[domain.RowState]int{}
	for _, s := range domain.RowStates {
		counts[s] = 0
	}
	rows, err := store.PoolForTest(st).Query(context.Background(), `SELECT state, count(*) FROM job_rows WHERE job_id = $1 GROUP BY state`, jobID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s domain.RowState
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		counts[s] = n
	}
	return counts
}

func checkCounts(t *testing.T, st *store.Store, jobID, when string) map[domain.RowState]int {
	t.Helper()
	got, err := st.RowCounts(context.Background(), jobID)
	if err != nil {
		t.Fatal(err)
	}
	if want := countRows(t, st, jobID); !maps.Equal(got, want) {
		t.Fatalf("%s: RowCounts = %v, the rows say %v", when, got, want)
	}
	byJob, err := st.RowCountsByJob(context.Background(), []string{jobID})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(byJob[jobID], got) {
		t.Fatalf("%s: RowCountsByJob = %v, RowCounts %v", when, byJob[jobID], got)
	}
	job, status, err := st.GetJobStatus(context.Background(), "acme", jobID)
	if err != nil || job.ID != jobID || !maps.Equal(status, got) {
		t.Fatalf("%s: GetJobStatus = %s %v, %v; RowCounts %v", when, job.ID, status, err, got)
	}
	return got
}

// The per-chunk counts (kept by triggers) equal a count of the rows after
// every kind of change: COPY, claims, outcomes, releases, lost leases,
// cancel, and concurrent saves of many chunks.
func TestRowCountsFollowEveryChange(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{ChunkSize: 10}, 95)
	if c := checkCounts(t, st, job.ID, "after COPY"); c[domain.RowPending] != 95 {
		t.Fatalf("pending = %d, want 95", c[domain.RowPending])
	}

	claim, err := st.ClaimChunk(ctx, job.ID, 0, time.Minute)
	if err != nil || len(claim.Rows) != 10 {
		t.Fatalf("claim: %d rows, %v", len(claim.Rows), err)
	}
	checkCounts(t, st, job.ID, "after a claim")
	if err := st.ExtendLease(ctx, claim.Token, claim.IDs(), time.Minute, time.Minute); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, st, job.ID, "after a heartbeat")

	now := time.Now()
	var outs []store.Outcome
	for i, r := range claim.Rows {
		o := store.Outcome{RowID: r.ID, Prov: store.Provenance{FetchedAt: now}, StagesDone: []domain.Stage{domain.StageProfile}}
		switch i % 5 {
		case 0:
			o.State, o.AnyMatch = domain.RowMatched, true
			o.Profile = &store.ProfileResult{ProfileURL: fmt.Sprint("https://p.example/in/", i), Raw: []byte(`{}`)}
		case 1:
			o.State, o.NoMatches = domain.RowNoMatch, []domain.Stage{domain.StageProfile}
		case 2:
			o.State, o.Reason, o.LastError = domain.RowFailed, "vendor rejected the input", "400"
		case 3:
			o.State, o.LastError, o.NextAttemptAt, o.FailedAttempt = domain.RowRetryWait, "503", now.Add(time.Hour), true
		default:
			o.State, o.StagesDone = domain.RowInFlight, nil // more stages to go
		}
		outs = append(outs, o)
	}
	if _, err := st.SaveOutcomes(ctx, "acme", claim.Token, outs, nil); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, st, job.ID, "after outcomes")
	// A stale token changes nothing.
	if _, err := st.SaveOutcomes(ctx, "acme", "00000000-0000-0000-0000-000000000000", outs, nil); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, st, job.ID, "after a stale save")

	var inFlight []int64
	for i, r := range claim.Rows {
		if i%5 == 4 {
			inFlight = append(inFlight, r.ID)
		}
	}
	if err := st.ReleaseRows(ctx, claim.Token, inFlight); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, st, job.ID, "after a release")

	// A lost worker: its lease expires and the sweep takes the rows back.
	if _, err := st.ClaimChunk(ctx, job.ID, 1, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if _, err := st.ReclaimExpiredLeases(ctx, 8, 100); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, st, job.ID, "after lost leases")

	// Many chunks saved at once.
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for c := 2; c < 10; c++ {
		wg.Go(func() {
			cl, err := st.ClaimChunk(ctx, job.ID, c, time.Minute)
			if err != nil {
				errs <- err
				return
			}
			var outs []store.Outcome
			for _, r := range cl.Rows {
				outs = append(outs, store.Outcome{RowID: r.ID, State: domain.RowNoMatch, NoMatches: []domain.Stage{domain.StageProfile},
					StagesDone: []domain.Stage{domain.StageProfile}, Prov: store.Provenance{FetchedAt: now}})
			}
			if _, err := st.SaveOutcomes(ctx, "acme", cl.Token, outs, nil); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkCounts(t, st, job.ID, "after concurrent saves")

	if _, err := st.CancelJob(ctx, "acme", job.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishJobs(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	if c := checkCounts(t, st, job.ID, "after cancel"); c[domain.RowPending] != 0 || c[domain.RowSkipped] == 0 {
		t.Fatalf("after cancel: %v", c)
	}

	// A job nobody knows has all zeros; deleting rows subtracts them.
	if c, err := st.RowCounts(ctx, "00000000-0000-0000-0000-000000000000"); err != nil || c[domain.RowPending] != 0 || len(c) != len(domain.RowStates) {
		t.Fatalf("unknown job: %v, %v", c, err)
	}
	if _, err := store.PoolForTest(st).Exec(ctx, `DELETE FROM job_rows WHERE job_id = $1 AND state = 'skipped'`, job.ID); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, st, job.ID, "after a delete")
	if _, _, err := st.GetJobStatus(ctx, "beta", job.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another tenant's job: %v", err)
	}
	if _, err := store.PoolForTest(st).Exec(ctx, `DELETE FROM jobs WHERE id = $1`, job.ID); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := store.PoolForTest(st).QueryRow(ctx, `SELECT count(*) FROM job_chunk_counts WHERE job_id = $1`, job.ID).Scan(&left); err != nil || left != 0 {
		t.Fatalf("counts of a deleted job: %d rows, %v", left, err)
	}
}
