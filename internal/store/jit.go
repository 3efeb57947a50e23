package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// noJIT turns Postgres's JIT compilation off for the rest of tx. A
// statement that probes an index per row (a page of results or of the feed,
// a download's cursor, an erasure's finds) is costed, without fresh
// statistics, far above jit_above_cost: compiling it took 0.3 to 2.8 s, where
// running it takes tens of milliseconds (docs/operations.md, "JIT").
func noJIT(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SET LOCAL jit = off`)
	return interpretError(err)
}
