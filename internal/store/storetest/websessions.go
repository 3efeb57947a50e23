package storetest

import (
	"context"
	"testing"

	"github.com/enrichq/enrichq/internal/store"
)

// WebSessions counts the web sessions in st's database, ended or not.
func WebSessions(tb testing.TB, st *store.Store) int {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	var n int
	if err := c.QueryRow(context.Background(), `SELECT count(*) FROM web_sessions`).Scan(&n); err != nil {
		tb.Fatalf("storetest: count web sessions: %v", err)
	}
	return n
}

// RevokeAPIKeyInSQL revokes the key of id as an operator's own SQL would,
// beside store.RevokeAPIKey: the key's web sessions are left in place.
func RevokeAPIKeyInSQL(tb testing.TB, st *store.Store, id string) {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	tag, err := c.Exec(context.Background(), `UPDATE api_keys SET revoked_at = now() WHERE id = $1::uuid AND revoked_at IS NULL`, id)
	if err != nil || tag.RowsAffected() != 1 {
		tb.Fatalf("storetest: revoke key %s: %d updated, %v", id, tag.RowsAffected(), err)
	}
}
