package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

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
