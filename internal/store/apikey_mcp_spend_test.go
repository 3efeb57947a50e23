package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// Commits to a key's MCP spend of a day pass while they fit, all at once
// too: of 24 concurrent commits of 5 under a ceiling of 50, exactly 10
// pass. A release gives room back; another day, key or tenant is apart.
func TestMCPSpendCeilingConcurrent(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	day := time.Date(2026, 11, 20, 23, 59, 0, 0, time.UTC)
	l := store.MCPSpendLimit{Tenant: "acme", KeyID: "k1", Day: day, Ceiling: 50}
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed, refused := 0, 0
	for range 24 {
		wg.Go(func() {
			_, err := st.CommitMCPSpend(ctx, l, 5)
			var dc *store.DailyCeilingError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				passed++
			case errors.As(err, &dc) && dc.Ceiling == 50 && dc.Asked == 5:
				refused++
			default:
				t.Errorf("commit: %v", err)
			}
		})
	}
	wg.Wait()
	if got, err := st.MCPSpent(ctx, l); passed != 10 || refused != 14 || got != 50 || err != nil {
		t.Fatalf("%d passed, %d refused, %d committed (%v); want 10, 14, 50", passed, refused, got, err)
	}
	if _, err := st.CommitMCPSpend(ctx, l, 51); err == nil {
		t.Fatal("a commit above the ceiling by itself passed")
	}
	if err := st.ReleaseMCPSpend(ctx, l, 5); err != nil {
		t.Fatal(err)
	}
	if got, err := st.CommitMCPSpend(ctx, l, 5); got != 50 || err != nil {
		t.Fatalf("after a release: %d, %v", got, err)
	}
	for _, other := range []store.MCPSpendLimit{
		{Tenant: "acme", KeyID: "k1", Day: day.Add(time.Minute), Ceiling: 50}, // 00:00 UTC: the next day
		{Tenant: "acme", KeyID: "k2", Day: day, Ceiling: 50},
		{Tenant: "beta", KeyID: "k1", Day: day, Ceiling: 50},
	} {
		if got, err := st.CommitMCPSpend(ctx, other, 50); got != 50 || err != nil {
			t.Errorf("%+v: %d, %v", other, got, err)
		}
	}
	if _, err := st.CommitMCPSpend(ctx, store.MCPSpendLimit{KeyID: "k1", Day: day, Ceiling: 50}, 1); !errors.Is(err, store.ErrNoTenant) {
		t.Errorf("no tenant: %v", err)
	}
}
