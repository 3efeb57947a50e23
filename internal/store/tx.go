package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
)

// inTx runs fn in a transaction of the pool and commits it; an error of fn
// rolls it back and is returned as it is, errors of Begin and Commit mapped
// (interpretError). It does not run fn again: wrap it in retry for that.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return interpretError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit
	if err := fn(tx); err != nil {
		return err
	}
	return interpretError(tx.Commit(ctx))
}

// collect runs a query of one column and returns its values.
func collect[T any](ctx context.Context, tx pgx.Tx, sql string, args ...any) ([]T, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[T])
	if out == nil {
		out = []T{}
	}
	return out, interpretError(err)
}

// exec runs a statement and returns the rows it touched.
func exec(ctx context.Context, tx pgx.Tx, sql string, args ...any) (int64, error) {
	tag, err := tx.Exec(ctx, sql, args...)
	if err != nil {
		return 0, fmt.Errorf("store: %w", interpretError(err))
	}
	return tag.RowsAffected(), nil
}

// retry runs fn until it succeeds, fails for good, or ctx ends. It runs it
// again after a deadlock or serialization failure (rolled back, so nothing
// of it was applied) and, when idempotent, after the database was
// unavailable (fn must then be safe to apply twice: a commit whose answer
// was lost may have been applied; else only when connecting failed, and
// retryMarked is the way). Waits grow from 10 ms to 1 s, jittered.
func (s *Store) retry(ctx context.Context, idempotent bool, fn func() error) error {
	wait := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil {
			return nil
		}
		if isConflict(err) {
			s.conflicts.Add(1)
		}
		again := isConflict(err) || (idempotent && isUnavailable(err)) || (isUnavailable(err) && notSent(err))
		if !again || ctx.Err() != nil || attempt >= 100 {
			return interpretError(err)
		}
		if !sleepJittered(ctx, wait) {
			return interpretError(err)
		}
		wait = min(2*wait, time.Second)
	}
}

// sleepJittered waits about d (between d/2 and d); false when ctx ended first.
func sleepJittered(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d/2 + rand.N(d/2+1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (s *Store) execPool(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return 0, interpretError(err)
	}
	return tag.RowsAffected(), nil
}
