package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

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
