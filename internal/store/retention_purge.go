package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Purged is what one retention step removed.
type Purged struct {
	Rows, Results, Markers, CacheEntries, FeedLines int64
	Extras                                          int64 // input rows' extra columns
	ChangeLines                                     int64 // a watch's change lines
	Jobs                                            int64 // jobs whose last rows went (purged_at set)
	// Abandoned is the jobs canceled because they had not changed for
	// longer than their tenant's window (see cancelAbandoned).
	Abandoned int64
	swept     int64 // feed lines of the window's sweep (FeedLines counts the rows' too)
}

// Total is everything Purged counts.
func (p Purged) Total() int64 {
	return p.Rows + p.Results + p.Markers + p.CacheEntries + p.FeedLines + p.Extras + p.ChangeLines
}

// More reports whether a step of batch may have left something due: it
// removed a whole batch of rows (extras included), cache entries, feed lines
// or change lines.
func (p Purged) More(batch int) bool {
	b := int64(batch)
	return p.Rows+p.Extras >= b || p.CacheEntries >= b || p.swept >= b || p.ChangeLines >= b
}

// PurgeExpired removes, for every tenant with a retention window, up to
// batch rows of its finished jobs older than the window (finished before
// now less the window) with their results and no-match markers, and up to
// batch cache entries (fetched before) and feed lines (logged before). Each
// part is a short transaction of its own. The job stays with its counts
// (job_chunk_counts is given back what the rows' delete took) and credits;
// when its last row is gone, purged_at is set and the purge is a line of the
// audit log. A job that will never finish is canceled first when it has not
// changed for longer than the window (cancelAbandoned), then purged as the
// finished jobs are.
func (s *Store) PurgeExpired(ctx context.Context, now time.Time, batch int) (Purged, error) {
	var p Purged
	if batch <= 0 {
		return p, errors.New("store: purge batch must be positive")
	}
	var err error
	if p.Abandoned, err = s.cancelAbandoned(ctx, now, batch); err != nil {
		return p, err
	}
	// One job at a time, oldest first, until batch rows went.
	for p.Rows+p.Extras < int64(batch) {
		jobID, tenant, err := s.nextExpiredJob(ctx, now)
		if errors.Is(err, pgx.ErrNoRows) {
			break
		}
		if err != nil {
			return p, interpretError(err)
		}
		err = s.inTx(ctx, func(tx pgx.Tx) error {
			return purgeJob(ctx, tx, jobID, tenant, now, batch-int(p.Rows+p.Extras), &p)
		})
		if err != nil {
			return p, err
		}
	}
	err = s.purgeCacheAndFeed(ctx, now, batch, &p)
	return p, err
}

// nextExpiredJob is the job, of a tenant with a retention window, that
// finished longest ago before the window and still has rows; pgx.ErrNoRows
// when there is none.
func (s *Store) nextExpiredJob(ctx context.Context, now time.Time) (jobID, tenant string, err error) {
	err = s.pool.QueryRow(ctx, nextExpiredJobSQL, now).Scan(&jobID, &tenant)
	return jobID, tenant, err
}

// nextExpiredJobSQL seeks, for each tenant with a window, its oldest
// finished job not purged yet (jobs_unpurged): a round with nothing due
// reads an index entry or none per such tenant.
const nextExpiredJobSQL = `SELECT x.id::text, x.tenant FROM tenants t CROSS JOIN LATERAL (
		SELECT j.id, j.tenant, j.finished_at FROM jobs j
		WHERE j.tenant = t.id AND j.purged_at IS NULL AND j.finished_at IS NOT NULL
		  AND j.finished_at < $1::timestamptz - t.retention_seconds * interval '1 second'
		ORDER BY j.finished_at LIMIT 1) x
	WHERE t.retention_seconds IS NOT NULL
	ORDER BY x.finished_at LIMIT 1`

// purgeJob removes up to limit rows of job jobID with their results,
// markers and feed lines, giving the job's counts back what the delete took,
// and adds them to p. When the job's last row is gone it removes its input
// extras, sets purged_at and appends the purge to the audit log.
func purgeJob(ctx context.Context, tx pgx.Tx, jobID, tenant string, now time.Time, limit int, p *Purged) error {
	var rows, results, markers, lines int64
	// Only job_rows_job_id gives the rows in (job_id, id) order: without
	// sorts, no plan reads the job's every row to sort them (job_rows_chunk
	// did, each batch, when the statistics had not seen the job).
	if _, err := tx.Exec(ctx, `SET LOCAL enable_sort = off`); err != nil {
		return interpretError(err)
	}
	err := tx.QueryRow(ctx, purgeRowsSQL, jobID, limit).
		Scan(&rows, &results, &markers, &lines)
	if err != nil {
		return interpretError(err)
	}
	p.Rows += rows
	p.Results += results
	p.Markers += markers
	p.FeedLines += lines
	var left bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM job_rows WHERE job_id >= $1 AND job_id <= $1)`, jobID).Scan(&left); err != nil {
		return interpretError(err)
	}
	if left {
		return nil
	}
	// The extras go in batches too, before the job counts as purged.
	room := int64(limit) - rows
	if room <= 0 {
		return nil
	}
	extras, err := exec(ctx, tx, purgeExtrasSQL, jobID, room)
	if err != nil {
		return err
	}
	p.Extras += extras
	if extras == room {
		return nil
	}
	if _, err := exec(ctx, tx, `UPDATE jobs SET purged_at = $2, updated_at = now() WHERE id = $1`, jobID, now); err != nil {
		return err
	}
	p.Jobs++
	var total int64
	if err := tx.QueryRow(ctx, `SELECT total_rows FROM jobs WHERE id = $1`, jobID).Scan(&total); err != nil {
		return interpretError(err)
	}
	return appendAudit(ctx, tx, AuditLine{Tenant: tenant, KeyID: ActorScheduler, Action: AuditRetentionPurge, Subject: jobID, Rows: total})
}

// purgeRowsSQL removes up to $2 rows of job $1, the oldest first, with
// their results, markers and feed lines, each through an index that starts
// at them: the rows by (job_id, id), results and markers by their row_id,
// feed lines by (job_id, row_id) between the batch's first and last row
// (the job's rows below the last are all in the batch: the others went
// before).
//
// The rows are not locked first (FOR UPDATE wrote each row twice): they
// are a finished job's, and a row an erasure deletes meanwhile is skipped
// by the delete and left out of the counts it returns, while a result saved
// late for a row goes with it through the row's foreign keys.
// why (no lock): a batch of 5,000 rows writes 20,150 WAL records, not 25,150 (1.09 MB, not 1.36); CPU the same (32 µs a row, BenchmarkPurge in turns)
//
// The job is named by a range, not "job_id = $1": with statistics that
// have seen one job (a young database), job_id = $1 looks like every row,
// and job_rows_pkey, in the order of id, would win and walk every other
// job's rows; a range leaves (job_id, id) the only index in that order.
const purgeRowsSQL = `WITH r AS (
		SELECT id FROM job_rows WHERE job_id >= $1 AND job_id <= $1 ORDER BY job_id, id LIMIT $2),
	ids AS (SELECT coalesce(array_agg(id), '{}') AS a, min(id) AS lo, max(id) AS hi FROM r),
	p AS (DELETE FROM profile_results WHERE row_id = ANY((SELECT a FROM ids)::bigint[]) RETURNING 1),
	e AS (DELETE FROM email_results WHERE row_id = ANY((SELECT a FROM ids)::bigint[]) RETURNING 1),
	ph AS (DELETE FROM phone_results WHERE row_id = ANY((SELECT a FROM ids)::bigint[]) RETURNING 1),
	n AS (DELETE FROM no_matches WHERE row_id = ANY((SELECT a FROM ids)::bigint[]) RETURNING 1),
	f AS (DELETE FROM results_feed_log WHERE job_id = $1 AND row_id >= (SELECT lo FROM ids) AND row_id <= (SELECT hi FROM ids)
		AND kind <> 'deleted' RETURNING 1),
	d AS (DELETE FROM job_rows WHERE id = ANY((SELECT a FROM ids)::bigint[]) RETURNING chunk, state),
	-- The counts stay: give back what the delete trigger takes.
	k AS (UPDATE job_chunk_counts c SET
			pending = c.pending + x.pending, in_flight = c.in_flight + x.in_flight, retry_wait = c.retry_wait + x.retry_wait,
			matched = c.matched + x.matched, no_match = c.no_match + x.no_match, failed = c.failed + x.failed, skipped = c.skipped + x.skipped
		FROM (SELECT chunk,
			count(*) FILTER (WHERE state = 'pending') AS pending, count(*) FILTER (WHERE state = 'in_flight') AS in_flight,
			count(*) FILTER (WHERE state = 'retry_wait') AS retry_wait, count(*) FILTER (WHERE state = 'matched') AS matched,
			count(*) FILTER (WHERE state = 'no_match') AS no_match, count(*) FILTER (WHERE state = 'failed') AS failed,
			count(*) FILTER (WHERE state = 'skipped') AS skipped
			FROM d GROUP BY chunk) x
		WHERE c.job_id = $1 AND c.chunk = x.chunk RETURNING 1)
	SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM p) + (SELECT count(*) FROM e) + (SELECT count(*) FROM ph),
		(SELECT count(*) FROM n), (SELECT count(*) FROM f) + 0 * (SELECT count(*) FROM k)`

// purgeExtrasSQL removes up to $2 input rows' extras of job $1, whose rows are gone.
const purgeExtrasSQL = `DELETE FROM job_input_extras WHERE job_id = $1 AND input_row = ANY(ARRAY(
	SELECT input_row FROM job_input_extras WHERE job_id = $1 ORDER BY input_row LIMIT $2))`

// purgeCacheAndFeed removes up to batch cache entries, up to batch feed
// lines and up to batch watch change lines older than their tenant's
// window, and adds them to p.
func (s *Store) purgeCacheAndFeed(ctx context.Context, now time.Time, batch int, p *Purged) error {
	n, err := s.execPool(ctx, purgeCacheSQL, now, batch)
	if err != nil {
		return err
	}
	p.CacheEntries = n
	if n, err = s.execPool(ctx, purgeFeedSQL, now, batch); err != nil {
		return err
	}
	p.FeedLines += n
	p.swept = n
	if n, err = s.execPool(ctx, purgeChangesSQL, now, batch); err != nil {
		return err
	}
	p.ChangeLines += n
	return nil
}

// The sweeps of purgeCacheAndFeed: for each tenant with a window, its
// oldest entries, lines or change lines through the index that orders them
// by age (lookup_cache_tenant_fetched, results_feed_log_tenant_logged,
// watch_changes_tenant_at), so that a round with nothing due reads about an
// index entry per such tenant; then each found by its row's address (a
// cache entry refreshed meanwhile has another, and stays) or its key.
const (
	purgeCacheSQL = `DELETE FROM lookup_cache WHERE ctid = ANY(ARRAY(
		SELECT x.ctid FROM tenants t CROSS JOIN LATERAL (
			SELECT c.ctid FROM lookup_cache c
			WHERE c.tenant = t.id COLLATE "C" AND c.fetched_at < $1::timestamptz - t.retention_seconds * interval '1 second'
			ORDER BY c.fetched_at LIMIT $2) x
		WHERE t.retention_seconds IS NOT NULL LIMIT $2))`
	purgeFeedSQL = `DELETE FROM results_feed_log WHERE seq = ANY(ARRAY(
		SELECT x.seq FROM tenants t CROSS JOIN LATERAL (
			SELECT l.seq FROM results_feed_log l
			WHERE l.tenant = t.id AND l.logged_at < $1::timestamptz - t.retention_seconds * interval '1 second'
			ORDER BY l.logged_at LIMIT $2) x
		WHERE t.retention_seconds IS NOT NULL LIMIT $2))`
	purgeChangesSQL = `DELETE FROM watch_changes WHERE id = ANY(ARRAY(
		SELECT x.id FROM tenants t CROSS JOIN LATERAL (
			SELECT c.id FROM watch_changes c
			WHERE c.tenant = t.id AND c.at < $1::timestamptz - t.retention_seconds * interval '1 second'
			ORDER BY c.at LIMIT $2) x
		WHERE t.retention_seconds IS NOT NULL LIMIT $2))`
)
