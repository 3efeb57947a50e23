package store

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// ResultStream selects the rows StreamResults reads.
type ResultStream struct {
	JobID   string
	State   domain.RowState // "" every state
	AfterID int64           // rows after this row id (0: from the first)
	// ExtraKeys reads the keys of the rows' extras first (a CSV's header),
	// in the same snapshot as the rows.
	ExtraKeys bool
	// Idle is the longest the reader may take between two batches (the
	// transaction's idle_in_transaction_session_timeout); 0 keeps the
	// session's.
	Idle time.Duration
}

// StreamBatch is the rows fetched from the cursor at a time: a round trip
// per so many rows; pgx hands them over one by one, so it bounds no memory.
const StreamBatch = 1000

// StreamResults reads every result of q.JobID in row order (resultsSelect),
// in one pass: one read-only REPEATABLE READ transaction holding a cursor,
// fetched in batches, so the rows are planned once and each FETCH is a
// statement of its own under statement_timeout. Being one transaction, it
// holds one server connection through PgBouncer in transaction mode. begin
// is called once, before the first row, with the extra keys when
// q.ExtraKeys (the rows' extras hold no other); each is called for every
// row. An error of begin or each ends the stream and is returned as it is.
func (s *Store) StreamResults(ctx context.Context, q ResultStream, begin func(extraKeys []string) error, each func(Result) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return interpretError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only: nothing to keep
	// The cursor is planned for the whole job: far above jit_above_cost.
	if err := noJIT(ctx, tx); err != nil {
		return err
	}
	if q.Idle > 0 {
		// SET takes no parameters; the value is a number of milliseconds.
		if _, err := tx.Exec(ctx, "SET LOCAL idle_in_transaction_session_timeout = "+strconv.FormatInt(q.Idle.Milliseconds(), 10)); err != nil {
			return interpretError(err)
		}
	}
	var keys []string
	if q.ExtraKeys {
		sql := resultExtraKeysSQL
		if q.State != "" {
			sql = resultExtraKeysOfStateSQL
		}
		if keys, err = collect[string](ctx, tx, sql, q.JobID, q.State, MaxResultExtraKeys); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, "DECLARE results_download NO SCROLL CURSOR FOR "+resultsSelect, q.JobID, q.AfterID, q.State); err != nil {
		return interpretError(err)
	}
	if err := begin(keys); err != nil {
		return err
	}
	var sc resultScan
	for {
		rows, err := tx.Query(ctx, "FETCH "+strconv.Itoa(StreamBatch)+" FROM results_download")
		if err != nil {
			return interpretError(err)
		}
		n := 0
		_, err = pgx.ForEachRow(rows, sc.dest(), func() error {
			n++
			r, err := sc.result()
			if err != nil {
				return err
			}
			return each(r)
		})
		if err != nil {
			return interpretError(err)
		}
		if n < StreamBatch {
			return nil
		}
	}
}

// resultExtraKeysSQL lists the keys of a job's extras ($1), sorted, at most
// $3 ($2, the state, unused: the same arguments as resultExtraKeysOfStateSQL).
const resultExtraKeysSQL = `
		SELECT DISTINCT k FROM job_input_extras x, jsonb_object_keys(x.extra) AS k
		WHERE x.job_id = $1 AND $2::text IS NOT NULL
		ORDER BY k LIMIT $3`

// resultExtraKeysOfStateSQL lists the keys of the extras of a job's rows
// ($1) in state $2: each row's extras reached by both keys (as in
// resultsSelect), never a semi-join the planner may run as a loop over the
// job's rows for every extra.
const resultExtraKeysOfStateSQL = `
		SELECT DISTINCT k FROM job_rows r
		CROSS JOIN LATERAL (SELECT x.extra FROM job_input_extras x
			WHERE x.job_id = r.job_id AND x.input_row = r.input_row LIMIT 1) x
		CROSS JOIN LATERAL jsonb_object_keys(x.extra) AS k
		WHERE r.job_id = $1 AND r.state = $2
		ORDER BY k LIMIT $3`
