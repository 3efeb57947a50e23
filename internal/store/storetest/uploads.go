package storetest

import (
	"context"
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
