package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// inPageTx runs fn in a transaction that plans a page (of a job's
// results, of the results feed) as pagePlanning says.
func (s *Store) inPageTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := pagePlanning(ctx, tx); err != nil {
			return err
		}
		return fn(tx)
	})
}

// pagePlanning sets how a page is planned, for the rest of tx.
//
// Without JIT (noJIT): a page's plan is a probe per line and table; costed
// for thousands of lines it passes jit_above_cost, and compiling it took
// longer than reading the page (0.5 s of a deep page of a 1,000,000-row job
// that reads in 50 ms; 1.5 s of a feed page).
//
// Without a sort (enable_sort = off, which leaves a sort only where no
// ordered path exists): a page walks its lines in order through an index
// ((tenant, seq), (job_id, id)) and stops at its limit. Without statistics
// (a tenant grown since the last ANALYZE) the planner took the tenant's
// feed lines for a few hundred, read every line after the position
// unordered (a bitmap scan), joined each, then sorted them to keep a page:
// 308,730 lines for 1,000, 18 s at 100,000 rows.
func pagePlanning(ctx context.Context, tx pgx.Tx) error {
	if err := noJIT(ctx, tx); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `SET LOCAL enable_sort = off`)
	return interpretError(err)
}
