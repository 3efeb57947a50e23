package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// GetJob returns a job of tenant; another tenant's job is ErrNotFound, and
// an empty tenant ErrNoTenant.
func (s *Store) GetJob(ctx context.Context, tenant, id string) (Job, error) {
	if err := needTenant(tenant); err != nil {
		return Job{}, err
	}
	if _, err := uuid.Parse(id); err != nil {
		return Job{}, ErrNotFound
	}
	return scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1 AND tenant = $2`, id, tenant))
}

// JobByID returns a job of any tenant. It is for internal callers that hold
// a job id from Postgres or the queue (workers, the scheduler, the operator's
// CLI); a tenant's request goes through GetJob.
func (s *Store) JobByID(ctx context.Context, id string) (Job, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Job{}, ErrNotFound
	}
	return scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, id))
}

// RowCounts returns the number of rows of a job in each state (every state
// present). It sums the job's per-chunk counts (job_chunk_counts, kept by
// triggers on job_rows in the same transactions as the rows): a status poll
// reads one small row per chunk instead of counting every row of the job.
func (s *Store) RowCounts(ctx context.Context, jobID string) (map[domain.RowState]int, error) {
	var n [7]int
	err := s.pool.QueryRow(ctx, `SELECT `+sumCounts+` FROM job_chunk_counts WHERE job_id = $1`, jobID).
		Scan(&n[0], &n[1], &n[2], &n[3], &n[4], &n[5], &n[6])
	if err != nil {
		return nil, interpretError(err)
	}
	return countsMap(n), nil
}

// GetJobStatus is GetJob and RowCounts in one round trip: what a status
// poll needs.
func (s *Store) GetJobStatus(ctx context.Context, tenant, id string) (Job, map[domain.RowState]int, error) {
	if err := needTenant(tenant); err != nil {
		return Job{}, nil, err
	}
	if _, err := uuid.Parse(id); err != nil {
		return Job{}, nil, ErrNotFound
	}
	var j Job
	var maxAge int64
	var n [7]int
	dest := append(jobDest(&j, &maxAge), &n[0], &n[1], &n[2], &n[3], &n[4], &n[5], &n[6])
	err := s.pool.QueryRow(ctx, jobStatusSQL, id, tenant).Scan(dest...)
	if err != nil {
		return Job{}, nil, interpretError(err)
	}
	j.MaxAge = time.Duration(maxAge) * time.Second
	return j, countsMap(n), nil
}

// jobStatusSQL reads a job and its row counts by state, summed over its
// chunks' counters: two probes, whatever the tenant holds.
const jobStatusSQL = `SELECT ` + jobColumns + `, k.* FROM jobs
	CROSS JOIN LATERAL (SELECT ` + sumCounts + ` FROM job_chunk_counts c WHERE c.job_id = jobs.id) AS k
	WHERE jobs.id = $1 AND jobs.tenant = $2`

// sumCounts sums job_chunk_counts' columns in domain.RowStates order.
const sumCounts = `coalesce(sum(pending), 0), coalesce(sum(in_flight), 0), coalesce(sum(retry_wait), 0),
	coalesce(sum(matched), 0), coalesce(sum(no_match), 0), coalesce(sum(failed), 0), coalesce(sum(skipped), 0)`

// countsMap turns counts in domain.RowStates order into a map by state.
func countsMap(n [7]int) map[domain.RowState]int {
	counts := make(map[domain.RowState]int, len(domain.RowStates))
	for i, st := range domain.RowStates {
		counts[st] = n[i]
	}
	return counts
}

// JobCursor is a position in a tenant's job list, newest first.
type JobCursor struct {
	CreatedAt time.Time
	ID        string
}

// ListJobs returns up to limit jobs of a tenant, newest first, after the cursor (nil: from the newest).
func (s *Store) ListJobs(ctx context.Context, tenant string, after *JobCursor, limit int) ([]Job, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	var rows pgx.Rows
	var err error
	if after == nil {
		rows, err = s.pool.Query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE tenant = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, tenant, limit)
	} else {
		if _, perr := uuid.Parse(after.ID); perr != nil {
			return nil, fmt.Errorf("store: bad cursor id")
		}
		rows, err = s.pool.Query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE tenant = $1 AND (created_at, id) < ($2, $3::uuid)
			ORDER BY created_at DESC, id DESC LIMIT $4`, tenant, after.CreatedAt, after.ID, limit)
	}
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var jobs []Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, interpretError(rows.Err())
}

// RowCountsByJob returns, for each of the given jobs, the number of its rows
// in each state (every state present), in one query. Jobs with no rows get
// all zeros.
func (s *Store) RowCountsByJob(ctx context.Context, jobIDs []string) (map[string]map[domain.RowState]int, error) {
	out := make(map[string]map[domain.RowState]int, len(jobIDs))
	for _, id := range jobIDs {
		counts := make(map[domain.RowState]int, len(domain.RowStates))
		for _, st := range domain.RowStates {
			counts[st] = 0
		}
		out[id] = counts
	}
	if len(jobIDs) == 0 {
		return out, nil
	}
	// The per-chunk counts kept by triggers on job_rows (see RowCounts).
	rows, err := s.pool.Query(ctx, `SELECT job_id::text, `+sumCounts+` FROM job_chunk_counts
		WHERE job_id = ANY($1::uuid[]) GROUP BY job_id`, jobIDs)
	if err != nil {
		return nil, interpretError(err)
	}
	var id string
	var n [7]int
	_, err = pgx.ForEachRow(rows, []any{&id, &n[0], &n[1], &n[2], &n[3], &n[4], &n[5], &n[6]}, func() error {
		if _, ok := out[id]; ok {
			out[id] = countsMap(n)
		}
		return nil
	})
	return out, interpretError(err)
}
