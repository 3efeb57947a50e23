package store

import (
	"context"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/jackc/pgx/v5"
)

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

// MaxResultExtraKeys caps ResultExtraKeys: ingest caps a job's distinct
// extra keys at as many (a CSV export's columns).
const MaxResultExtraKeys = 256

// ResultExtraKeys returns the keys of the extra columns of a job's rows,
// sorted, optionally only of rows in state; at most MaxResultExtraKeys.
func (s *Store) ResultExtraKeys(ctx context.Context, jobID string, state domain.RowState) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT k FROM job_input_extras x, jsonb_object_keys(x.extra) AS k
		WHERE x.job_id = $1
		  AND ($2 = '' OR EXISTS (SELECT 1 FROM job_rows r WHERE r.job_id = x.job_id AND r.input_row = x.input_row AND r.state = $2))
		ORDER BY k LIMIT $3`, jobID, state, MaxResultExtraKeys)
	if err != nil {
		return nil, interpretError(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return keys, interpretError(err)
}
