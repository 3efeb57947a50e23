package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// DispatchChunks hands out a job's due chunks in order, at most window of
// them in the queue at once, each once within recheck; a job submitted later
// gets its chunks at once, whatever the size of the jobs before it.
func TestDispatchChunksWindow(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	big := createJob(t, st, store.NewJob{ChunkSize: 10}, 45) // chunks 0..4
	chunks := func(refs []store.ChunkRef, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range refs {
			name := "big"
			if r.JobID != big.ID {
				name = "small"
			}
			out = append(out, fmt.Sprintf("%s:%d", name, r.Chunk))
		}
		return fmt.Sprint(out)
	}
	if got := chunks(st.DispatchChunks(ctx, big.ID, 2, time.Minute, 100)); got != "[big:0 big:1]" {
		t.Fatalf("first dispatch: %s", got)
	}
	if got := chunks(st.DispatchChunks(ctx, big.ID, 2, time.Minute, 100)); got != "[]" {
		t.Fatalf("window full, yet: %s", got)
	}
	// Chunk 0 ends: chunk 2 takes its place.
	claim, err := st.ClaimChunk(ctx, big.ID, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var outs []store.Outcome
	for _, r := range claim.Rows {
		outs = append(outs, store.Outcome{RowID: r.ID, State: domain.RowNoMatch, NoMatches: []domain.Stage{domain.StageProfile}, StagesDone: []domain.Stage{domain.StageProfile},
			Prov: store.Provenance{FetchedAt: time.Now()}})
	}
	if _, err := st.SaveOutcomes(ctx, "acme", claim.Token, outs, nil); err != nil {
		t.Fatal(err)
	}
	if got := chunks(st.DispatchChunks(ctx, big.ID, 2, time.Minute, 100)); got != "[big:2]" {
		t.Fatalf("after chunk 0 ended: %s", got)
	}
	// A job submitted later is not behind the big one's remaining chunks.
	createJob(t, st, store.NewJob{ChunkSize: 10}, 5)
	if got := chunks(st.DispatchChunks(ctx, "", 2, time.Minute, 100)); got != "[small:0]" {
		t.Fatalf("sweep with a small job: %s", got)
	}
	// Past recheck every stamp is stale (their tasks may be lost): the
	// chunks with work come back, the finished one never.
	if got := chunks(st.DispatchChunks(ctx, big.ID, 10, 0, 100)); got != "[big:1 big:2 big:3 big:4]" {
		t.Fatalf("after recheck: %s", got)
	}
}
