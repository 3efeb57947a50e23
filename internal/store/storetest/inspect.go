package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/store"
)

// databases maps each Store of New and Open to its database URL, so that the
// helpers below can reach its tables without the store exposing its pool.
var databases sync.Map

// connect opens a connection of its own to st's database, closed by the
// returned function.
func connect(tb testing.TB, st *store.Store) (*pgx.Conn, func()) {
	tb.Helper()
	url, ok := databases.Load(st)
	if !ok {
		tb.Fatal("storetest: a store not made by storetest.New or storetest.Open")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c, err := pgx.Connect(ctx, url.(string))
	if err != nil {
		cancel()
		tb.Fatalf("storetest: connect: %v", err)
	}
	return c, func() { c.Close(context.Background()); cancel() }
}

// JobsAndRows counts the jobs and the job rows in st's database, of every tenant.
func JobsAndRows(tb testing.TB, st *store.Store) (jobs, rows int) {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	if err := c.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM job_rows)`).
		Scan(&jobs, &rows); err != nil {
		tb.Fatalf("storetest: count jobs and rows: %v", err)
	}
	return jobs, rows
}

// StartJobAt marks a job running since at, as if its first row had been
// claimed then.
func StartJobAt(tb testing.TB, st *store.Store, jobID string, at time.Time) {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	tag, err := c.Exec(context.Background(), `UPDATE jobs SET state = 'running', started_at = $2 WHERE id = $1`, jobID, at)
	if err != nil || tag.RowsAffected() != 1 {
		tb.Fatalf("storetest: start job %s: %d updated, %v", jobID, tag.RowsAffected(), err)
	}
}

// SealedMemberToken is a platform member's token as the database holds it.
func SealedMemberToken(tb testing.TB, st *store.Store, memberID string) []byte {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	var sealed []byte
	if err := c.QueryRow(context.Background(), `SELECT token FROM platform_members WHERE id = $1`, memberID).Scan(&sealed); err != nil {
		tb.Fatalf("storetest: token of member %s: %v", memberID, err)
	}
	return sealed
}

// ConnectStates counts the platform connect states stored, used or not.
func ConnectStates(tb testing.TB, st *store.Store) int {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	var n int
	if err := c.QueryRow(context.Background(), `SELECT count(*) FROM platform_connect_states`).Scan(&n); err != nil {
		tb.Fatalf("storetest: count connect states: %v", err)
	}
	return n
}

// LapseReservations moves the expiry of every open reservation into the
// past, as if its TTL had run out, and returns how many it moved.
func LapseReservations(tb testing.TB, st *store.Store) int {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	tag, err := c.Exec(context.Background(), `UPDATE credit_ledger SET expires_at = now() - interval '1 second' WHERE status = 'reserved'`)
	if err != nil {
		tb.Fatalf("storetest: lapse reservations: %v", err)
	}
	return int(tag.RowsAffected())
}
