package storetest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/store"
)

// WatchRunJobs is the jobs of a watch's runs, oldest first.
func WatchRunJobs(tb testing.TB, st *store.Store, watchID string) []string {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	rows, err := c.Query(context.Background(), `SELECT job_id::text FROM watch_runs WHERE watch_id = $1 ORDER BY created_at, slot`, watchID)
	if err != nil {
		tb.Fatalf("storetest: watch runs: %v", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatalf("storetest: watch runs: %v", err)
	}
	return out
}

// FeedChangedLines counts the results feed's lines of kind changed of a watch.
func FeedChangedLines(tb testing.TB, st *store.Store, watchID string) int {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	var n int
	if err := c.QueryRow(context.Background(), `SELECT count(*) FROM results_feed WHERE kind = 'changed' AND change_watch_id = $1`, watchID).Scan(&n); err != nil {
		tb.Fatalf("storetest: feed lines: %v", err)
	}
	return n
}

// WatchTraces counts a watch's inputs and change lines, and of them those
// that name ref.
func WatchTraces(tb testing.TB, st *store.Store, watchID, ref string) (inputs, changes, ofRef int) {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	if err := c.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM watch_inputs WHERE watch_id = $1),
		(SELECT count(*) FROM watch_changes WHERE watch_id = $1),
		(SELECT count(*) FROM watch_inputs WHERE watch_id = $1 AND ref = $2) + (SELECT count(*) FROM watch_changes WHERE watch_id = $1 AND ref = $2)`,
		watchID, ref).Scan(&inputs, &changes, &ofRef); err != nil {
		tb.Fatalf("storetest: watch traces: %v", err)
	}
	return inputs, changes, ofRef
}

// WatchRunDiffed reports whether the watch run of a job has been compared
// with its watch's snapshots.
func WatchRunDiffed(tb testing.TB, st *store.Store, jobID string) bool {
	tb.Helper()
	c, done := connect(tb, st)
	defer done()
	var diffed bool
	if err := c.QueryRow(context.Background(), `SELECT diffed_at IS NOT NULL FROM watch_runs WHERE job_id = $1`, jobID).Scan(&diffed); err != nil {
		tb.Fatalf("storetest: watch run: %v", err)
	}
	return diffed
}
