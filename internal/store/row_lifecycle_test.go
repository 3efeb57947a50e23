package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// rowStates is the state of each row of a job, by id.
func rowStates(t *testing.T, st *store.Store, jobID string) map[int64]domain.RowState {
	t.Helper()
	res, err := st.ListResults(context.Background(), jobID, "", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[int64]domain.RowState, len(res))
	for _, r := range res {
		out[r.RowID] = r.State
	}
	return out
}

// lifecycle runs the store's operations on one job and checks, after each,
// that every row that changed state made a move domain.RowState allows, and
// that the moves the step is for did happen.
type lifecycle struct {
	t     *testing.T
	st    *store.Store
	job   string
	state map[int64]domain.RowState
}

func (l *lifecycle) step(name string, want map[[2]domain.RowState]int) {
	l.t.Helper()
	now := rowStates(l.t, l.st, l.job)
	got := map[[2]domain.RowState]int{}
	for id, s := range now {
		was := l.state[id]
		if was == s {
			continue
		}
		if !was.CanBecome(s) {
			l.t.Errorf("%s: row %d went %s -> %s, which the row lifecycle does not allow", name, id, was, s)
		}
		got[[2]domain.RowState{was, s}]++
	}
	for move, n := range want {
		if got[move] != n {
			l.t.Errorf("%s: %d rows went %s -> %s, want %d (all moves: %v)", name, got[move], move[0], move[1], n, got)
		}
	}
	l.state = now
}

// Every statement that moves rows keeps to the transitions of domain.RowState:
// claims, outcomes of each kind, releases, claims of due retries, lost
// leases (under and at the attempt cap) and a cancel.
func TestRowChangesKeepToTheLifecycle(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{ChunkSize: 10}, 30)
	l := &lifecycle{t: t, st: st, job: job.ID, state: rowStates(t, st, job.ID)}
	type move = [2]domain.RowState
	P, F, R := domain.RowPending, domain.RowInFlight, domain.RowRetryWait

	claim, err := st.ClaimChunk(ctx, job.ID, 0, time.Minute)
	if err != nil || len(claim.Rows) != 10 {
		t.Fatalf("claim: %d rows, %v", len(claim.Rows), err)
	}
	l.step("claim", map[move]int{{P, F}: 10})

	now := time.Now()
	var outs []store.Outcome
	var keep []int64
	for i, r := range claim.Rows {
		o := store.Outcome{RowID: r.ID, Prov: store.Provenance{FetchedAt: now}, StagesDone: []domain.Stage{domain.StageProfile}}
		switch i % 5 {
		case 0:
			o.State, o.AnyMatch = domain.RowMatched, true
		case 1:
			o.State, o.NoMatches = domain.RowNoMatch, []domain.Stage{domain.StageProfile}
		case 2:
			o.State, o.Reason = domain.RowFailed, "vendor rejected the input"
		case 3: // due at once, so the next claim takes it
			o.State, o.NextAttemptAt, o.FailedAttempt, o.StagesDone = domain.RowRetryWait, now.Add(-time.Second), true, nil
		default:
			o.State, o.StagesDone = domain.RowInFlight, nil
			keep = append(keep, r.ID)
		}
		outs = append(outs, o)
	}
	// An outcome the lifecycle does not allow a claimed row is refused, and
	// nothing of the batch is written.
	for _, bad := range []domain.RowState{"", "queued", "done"} {
		wrong := append([]store.Outcome{{RowID: claim.Rows[0].ID, State: bad}}, outs...)
		if ids, err := st.SaveOutcomes(ctx, "acme", claim.Token, wrong, nil); err == nil || len(ids) != 0 {
			t.Fatalf("SaveOutcomes with state %q: wrote %v, err %v; want an error", bad, ids, err)
		}
	}
	l.step("refused outcomes", map[move]int{})
	if _, err := st.SaveOutcomes(ctx, "acme", claim.Token, outs, nil); err != nil {
		t.Fatal(err)
	}
	l.step("outcomes", map[move]int{{F, domain.RowMatched}: 2, {F, domain.RowNoMatch}: 2, {F, domain.RowFailed}: 2, {F, R}: 2})

	if err := st.ReleaseRows(ctx, claim.Token, keep); err != nil {
		t.Fatal(err)
	}
	l.step("release", map[move]int{{F, P}: 2})

	again, err := st.ClaimChunk(ctx, job.ID, 0, time.Minute)
	if err != nil || len(again.Rows) != 4 {
		t.Fatalf("claim of released and due rows: %d rows, %v", len(again.Rows), err)
	}
	l.step("claim again", map[move]int{{P, F}: 2, {R, F}: 2})

	// Lost workers: leases expire; under the attempt cap the rows go back to
	// pending, at it they fail.
	if _, err := st.ClaimChunk(ctx, job.ID, 1, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	l.step("claim with a short lease", map[move]int{{P, F}: 10})
	time.Sleep(20 * time.Millisecond)
	if _, err := st.ReclaimExpiredLeases(ctx, 8, 100); err != nil {
		t.Fatal(err)
	}
	l.step("lost leases", map[move]int{{F, P}: 10})
	if _, err := st.ClaimChunk(ctx, job.ID, 1, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	l.step("claim with a short lease again", map[move]int{{P, F}: 10})
	time.Sleep(20 * time.Millisecond)
	if _, err := st.ReclaimExpiredLeases(ctx, 2, 100); err != nil {
		t.Fatal(err)
	}
	l.step("lost leases at the attempt cap", map[move]int{{F, domain.RowFailed}: 10})

	// The second claim of chunk 0 set one row to wait, to be skipped by the cancel.
	var wait []store.Outcome
	for _, r := range again.Rows[:1] {
		wait = append(wait, store.Outcome{RowID: r.ID, State: R, NextAttemptAt: now.Add(time.Hour), Prov: store.Provenance{FetchedAt: now}})
	}
	if _, err := st.SaveOutcomes(ctx, "acme", again.Token, wait, nil); err != nil {
		t.Fatal(err)
	}
	l.step("retry later", map[move]int{{F, R}: 1})

	if _, err := st.CancelJob(ctx, "acme", job.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishJobs(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	// Chunk 2's pending rows and the waiting one are skipped; rows held by a
	// worker stay in flight until it lets them go.
	l.step("cancel", map[move]int{{P, domain.RowSkipped}: 10, {R, domain.RowSkipped}: 1})
	if err := st.ReleaseRows(ctx, again.Token, again.IDs()[1:]); err != nil {
		t.Fatal(err)
	}
	l.step("release after the cancel", map[move]int{{F, P}: 3})
	if _, err := st.FinishJobs(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	l.step("finish after the cancel", map[move]int{{P, domain.RowSkipped}: 3})
}
