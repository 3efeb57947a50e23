package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

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
