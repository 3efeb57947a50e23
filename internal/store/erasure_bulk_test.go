package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A bulk call's key digests the inputs of its rows: an erasure rewrites
// the keys of the closed bulk calls of the person's chunk, and of their
// job's lines of before chunks were kept (chunk unknown), never another
// chunk's: how many it rewrites follows the person's rows, not the size of
// their jobs.
func TestErasureRewritesTheBulkLinesOfThePersonsChunks(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := people(t, st, "acme") // one chunk, 0
	zero, other := 0, 7
	lines := map[string]*int{"bulk-mine": &zero, "bulk-other-chunk": &other, "bulk-of-before": nil}
	ids := map[string]int64{}
	for key, chunk := range lines {
		id, err := st.Reserve(ctx, store.Reservation{JobID: job.ID, RowCount: 5, Stage: domain.StageBulk, Endpoint: "/v1/bulk",
			IdempotencyKey: key, Credits: 4, Chunk: chunk})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Settle(ctx, id, store.Settlement{Charged: 3, Reported: true}); err != nil {
			t.Fatal(err)
		}
		ids[key] = id
	}
	open, err := st.Reserve(ctx, store.Reservation{JobID: job.ID, RowCount: 5, Stage: domain.StageBulk, Endpoint: "/v1/bulk",
		IdempotencyKey: "bulk-in-flight", Credits: 4, Chunk: &zero})
	if err != nil {
		t.Fatal(err)
	}

	e, err := st.Erase(ctx, eraseReq("acme", store.Person{Name: "Di Ruiz", Domain: "ruiz.example"}))
	if err != nil {
		t.Fatal(err)
	}
	if e.Receipt["job_rows"] != 1 || e.Receipt["credit_ledger (rewritten)"] != 2 {
		t.Fatalf("receipt %v: want 1 row and 2 bulk lines rewritten (its chunk's, and the one of before)", e.Receipt)
	}
	entries, err := st.LedgerEntries(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[int64]string{}
	var spent int64
	for _, le := range entries {
		keys[le.ID] = le.IdempotencyKey
		spent += le.Charged
	}
	for name, id := range ids {
		erased := strings.HasPrefix(keys[id], "erased-")
		if want := name != "bulk-other-chunk"; erased != want {
			t.Errorf("%s: key %q, want rewritten %v", name, keys[id], want)
		}
	}
	if keys[open] != "bulk-in-flight" {
		t.Errorf("the open call's key %q: a call in flight is settled by its key, not rewritten", keys[open])
	}
	if spent != 9 {
		t.Errorf("the ledger's charges %d after the erasure, want 9: the money stays", spent)
	}
}
