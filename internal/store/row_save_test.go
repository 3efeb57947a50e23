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

// An email's verdict (the verify stage's) is stored with it and read back
// by the results, the download's stream and the feed; an email without one
// reads "", and a verdict that is not one of the statuses is refused.
func TestEmailStatusStoredAndRead(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{}, 3)
	c, err := st.ClaimChunk(ctx, job.ID, 0, time.Minute)
	if err != nil || len(c.Rows) != 3 {
		t.Fatalf("claim: %v %d", err, len(c.Rows))
	}
	now := time.Now()
	email := func(i int, addr, status string) store.Outcome {
		return store.Outcome{RowID: c.Rows[i].ID, Email: &store.EmailResult{ProfileURL: "https://platform.example/in/a", Email: addr, Status: status, Raw: []byte(`{}`)},
			StagesDone: []domain.Stage{domain.StageEmail}, State: domain.RowMatched, Prov: store.Provenance{FetchedAt: now}}
	}
	if _, err := st.SaveOutcomes(ctx, "acme", c.Token, []store.Outcome{email(2, "x@acme.example", "bouncy")}, nil); err == nil {
		t.Fatal("a status that is no verdict was stored")
	}
	ids, err := st.SaveOutcomes(ctx, "acme", c.Token, []store.Outcome{email(0, "a@acme.example", "accept_all"), email(1, "b@acme.example", "")}, nil)
	if err != nil || len(ids) != 2 {
		t.Fatalf("save: %v %v", ids, err)
	}
	want := map[string]string{"a@acme.example": "accept_all", "b@acme.example": ""}
	res, err := st.ListResults(ctx, job.ID, "", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	streamed := map[string]string{}
	err = st.StreamResults(ctx, store.ResultStream{JobID: job.ID}, func([]string) error { return nil }, func(r store.Result) error {
		if r.FoundEmail != nil {
			streamed[r.FoundEmail.Email] = r.FoundEmail.Status
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AdvanceResultsFeed(ctx); err != nil {
		t.Fatal(err)
	}
	items, err := st.ResultsFeed(ctx, "acme", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	listed, fed := map[string]string{}, map[string]string{}
	for _, r := range res {
		if r.FoundEmail != nil {
			listed[r.FoundEmail.Email] = r.FoundEmail.Status
		}
	}
	for _, it := range items {
		if it.Kind == store.FeedEmail && it.JobID == job.ID {
			fed[it.FoundEmail.Email] = it.FoundEmail.Status
		}
	}
	for name, got := range map[string]map[string]string{"results": listed, "download": streamed, "feed": fed} {
		if len(got) != 2 || got["a@acme.example"] != want["a@acme.example"] || got["b@acme.example"] != want["b@acme.example"] {
			t.Errorf("%s: statuses %v, want %v", name, got, want)
		}
	}
}
