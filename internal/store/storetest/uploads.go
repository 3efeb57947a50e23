package storetest

import (
	"context"
	"sync"
	"testing"

	"github.com/enrichq/enrichq/internal/store"
)

// Uploads counts the stored uploads in st's database, of every tenant,
// expired or not.
func Uploads(tb testing.TB, st *store.Store) int {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	var n int
	if err := c.QueryRow(context.Background(), `SELECT count(*) FROM uploads`).Scan(&n); err != nil {
		tb.Fatalf("storetest: count uploads: %v", err)
	}
	return n
}

// LockUploads locks the uploads table of st's database against every read
// until unlock is called (at the latest when the test ends): a read of a
// stored upload waits there, deterministically, for as long as a test
// needs. waiting counts the statements waiting for the lock.
func LockUploads(tb testing.TB, st *store.Store) (waiting func() int, unlock func()) {
	tb.Helper()
	c, done := connect(tb, st)
	ctx := context.Background()
	tx, err := c.Begin(ctx)
	if err != nil {
		done()
		tb.Fatalf("storetest: lock uploads: %v", err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE uploads IN ACCESS EXCLUSIVE MODE`); err != nil {
		done()
		tb.Fatalf("storetest: lock uploads: %v", err)
	}
	var once sync.Once
	unlock = func() {
		once.Do(func() {
			_ = tx.Rollback(ctx)
			done()
		})
	}
	tb.Cleanup(unlock)
	waiting = func() int {
		tb.Helper()
		w, wdone := connect(tb, st)
		defer wdone()
		var n int
		if err := w.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE relation = 'uploads'::regclass AND NOT granted`).Scan(&n); err != nil {
			tb.Fatalf("storetest: count waiting: %v", err)
		}
		return n
	}
	return waiting, unlock
}
