package store_test

import (
	"context"
	"testing"

	"github.com/enrichq/enrichq/internal/store/storetest"
)

// What is learned of a vendor key is kept in Postgres: unknown at first,
// honours keys from the first replay on, the first replay remembered once.
func TestHonoursKeysIsLearnedAndPersisted(t *testing.T) {
	t.Parallel()
	url := storetest.NewDatabase(t)
	st := storetest.Open(t, url)
	ctx := context.Background()
	if h, known, err := st.HonoursKeys(ctx, "acct-h"); err != nil || known || h {
		t.Fatalf("new key: honours %v, known %v, %v", h, known, err)
	}
	if first, err := st.LearnHonoursKeys(ctx, "acct-h", 41); err != nil || !first {
		t.Fatalf("first replay: first %v, %v", first, err)
	}
	if first, err := st.LearnHonoursKeys(ctx, "acct-h", 42); err != nil || first {
		t.Fatalf("second replay: first %v, %v", first, err)
	}
	// Another process (a fresh store on the same database) knows it.
	other := storetest.Open(t, url)
	if h, known, err := other.HonoursKeys(ctx, "acct-h"); err != nil || !known || !h {
		t.Fatalf("after a replay: honours %v, known %v, %v", h, known, err)
	}
	if h, known, err := other.HonoursKeys(ctx, "acct-other"); err != nil || known || h {
		t.Fatalf("another key: honours %v, known %v, %v", h, known, err)
	}
}
