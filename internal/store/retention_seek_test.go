package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// The purge, stepped until nothing more is due, removes every row of the
// jobs past their tenant's window with their results, markers, feed lines
// and extras, and the cache entries and feed lines past it; and nothing of a
// job inside the window, nor of a tenant without one.
func TestPurgeRemovesEverythingDueAndNothingElse(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	now := time.Now()
	old, recent := now.Add(-40*24*time.Hour), now.Add(-time.Hour)
	due := storetest.GrowJob(t, st, "acme", 1200, old, true)
	fresh := storetest.GrowJob(t, st, "acme", 300, recent, false)
	other := storetest.GrowJob(t, st, "beta", 300, old, false)
	window := 30 * 24 * time.Hour
	if _, err := st.SetRetention(ctx, "acme", "k", &window); err != nil {
		t.Fatal(err)
	}
	count := func(sql string, args ...any) int {
		t.Helper()
		n, err := st.Count(ctx, sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	traces := func(job string) int {
		return count(`SELECT (SELECT count(*) FROM job_rows WHERE job_id = $1) + (SELECT count(*) FROM profile_results WHERE job_id = $1)
			+ (SELECT count(*) FROM email_results WHERE job_id = $1) + (SELECT count(*) FROM phone_results WHERE job_id = $1)
			+ (SELECT count(*) FROM no_matches WHERE job_id = $1) + (SELECT count(*) FROM results_feed_log WHERE job_id = $1)
			+ (SELECT count(*) FROM job_input_extras WHERE job_id = $1)`, job)
	}
	keptBefore := map[string]int{fresh.ID: traces(fresh.ID), other.ID: traces(other.ID)}
	cacheOf := func(tag string) int {
		return count(`SELECT count(*) FROM lookup_cache WHERE input_key LIKE 'k:' || $1 || ':%'`, tag)
	}
	const batch = 500
	var total store.Purged
	for steps := 0; ; steps++ {
		if steps > 100 {
			t.Fatalf("still purging after %d steps: %+v", steps, total)
		}
		p, err := st.PurgeExpired(ctx, now, batch)
		if err != nil {
			t.Fatal(err)
		}
		if p.Rows+p.Extras > batch {
			t.Fatalf("a step removed %d rows and extras, the batch is %d", p.Rows+p.Extras, batch)
		}
		total.Rows, total.Extras, total.Jobs, total.CacheEntries = total.Rows+p.Rows, total.Extras+p.Extras, total.Jobs+p.Jobs, total.CacheEntries+p.CacheEntries
		if !p.More(batch) {
			break
		}
	}
	if n := traces(due.ID); n != 0 {
		t.Errorf("%d rows, results, markers, feed lines or extras of the due job left", n)
	}
	if n := cacheOf(due.Tag); n != 0 {
		t.Errorf("%d cache entries past the window left", n)
	}
	if total.Rows != 1200 || total.Extras != 1200 || total.Jobs != 1 || total.CacheEntries != 1200 {
		t.Errorf("purged %+v; want 1200 rows and extras, 1200 cache entries, 1 job", total)
	}
	if j, err := st.JobByID(ctx, due.ID); err != nil || j.PurgedAt == nil {
		t.Errorf("due job %+v, %v: want purged_at", j, err)
	}
	for id, n := range keptBefore {
		if got := traces(id); got != n || n == 0 {
			t.Errorf("job %s: %d traces, had %d", id, got, n)
		}
		if j, _ := st.JobByID(ctx, id); j.PurgedAt != nil {
			t.Errorf("job %s purged", id)
		}
	}
	if cacheOf(fresh.Tag) != 300 || cacheOf(other.Tag) != 300 {
		t.Errorf("cache entries inside the window or without one went: %d, %d", cacheOf(fresh.Tag), cacheOf(other.Tag))
	}
	if n := count(`SELECT count(*) FROM credit_ledger WHERE job_id = $1`, due.ID); n != 1200 {
		t.Errorf("the purged job's ledger has %d lines, had 1200", n)
	}
}
