package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
)

// A statement whose answer is lost (the connection cut after it was sent: a
// failover, a restart, a network fault) may or may not have committed. For
// what may be applied twice (a settlement) running it again is enough; for
// what must not (a credit reservation, a chunk's save, a submitted job) the
// outcome is found, never guessed: the statement writes a mark of its own
// (commit_marks, a token made here) in its transaction, and after a lost
// answer the token is inserted again, fenced. That insert waits for the first
// transaction while it still runs; then it either finds the first's mark (it
// committed) or stands in its place (it did not, and now never can).

// ErrOutcomeUnknown: a statement's answer was lost and its outcome could not
// be read before the context ended (the database stayed unreachable). It
// wraps ErrUnavailable.
var ErrOutcomeUnknown = fmt.Errorf("%w: the outcome of a cut statement is not known yet", ErrUnavailable)

// markSQL is the CTE that writes a mark, with ids from the statement's own
// rows (a SELECT yielding bigint); the statement's named arguments then
// include "mark".
func markSQL(ids string) string {
	return `mark AS (INSERT INTO commit_marks (token, ids) SELECT @mark::uuid, ` + ids + `)`
}

// errRunAgain: retryMarked's fn asks to be run again at once, with a new
// mark (its statement committed a mark and nothing else).
var errRunAgain = errors.New("store: run again")

// answerLost reports whether err left the outcome of a statement unknown:
// the database became unavailable after the statement was sent. An error
// Postgres answered (a constraint, a conflict) says it did not commit.
func answerLost(err error) bool {
	if err == nil || !isUnavailable(err) || notSent(err) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// A broken connection as a pooler reports it, or the FATAL of a
		// server shutting down: the session's last statement may have
		// committed before it.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02"
	}
	return true
}

// notSent reports whether err came before any statement was written:
// connecting failed. pgconn.SafeToRetry is not enough: pgx (5.12) reports a
// simple-protocol statement whose answer was lost, a COMMIT among them, as
// "conn closed", safe to retry.
func notSent(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}

// retryMarked runs fn (one statement or transaction that writes mark in
// commit_marks as part of its commit) until it succeeds, fails for good, or
// ctx ends. A conflict, or an error before anything was sent, runs it again.
// After a lost answer it finds the outcome (fence): a transaction that
// committed is not run again, and its mark's ids are returned with
// committed true (fn's own results were lost with the answer); one that did
// not is run again with a new mark.
func (s *Store) retryMarked(ctx context.Context, fn func(mark uuid.UUID) error) (ids []int64, committed bool, err error) {
	wait := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		mark, err := uuid.NewV7()
		if err != nil {
			return nil, false, err
		}
		err = fn(mark)
		if err == nil {
			return nil, false, nil
		}
		if answerLost(err) {
			ids, committed, ferr := s.fence(ctx, mark)
			if ferr != nil {
				return nil, false, fmt.Errorf("%w (%w)", ErrOutcomeUnknown, err)
			}
			s.cutCommits.Add(1)
			if committed {
				return ids, true, nil
			}
			// Not applied, and now it never will be: run it again.
		}
		if isConflict(err) {
			s.conflicts.Add(1)
		}
		if errors.Is(err, errRunAgain) && attempt < 100 {
			continue
		}
		again := isConflict(err) || isUnavailable(err)
		if !again || ctx.Err() != nil || attempt >= 100 {
			return nil, false, interpretError(err)
		}
		if !sleepJittered(ctx, wait) {
			return nil, false, interpretError(err)
		}
		wait = min(2*wait, time.Second)
	}
}

// fence finds whether the transaction of mark committed, and makes sure one
// that did not never will: it inserts mark fenced (waiting for the
// transaction, if it still runs), then reads whose the mark is. It is run
// again while the database is unavailable, until ctx ends.
func (s *Store) fence(ctx context.Context, mark uuid.UUID) (ids []int64, committed bool, err error) {
	err = s.retry(ctx, true, func() error {
		if _, err := s.pool.Exec(ctx, `INSERT INTO commit_marks (token, fenced) VALUES ($1::uuid, true) ON CONFLICT (token) DO NOTHING`, mark); err != nil {
			return err
		}
		var fenced bool
		if err := s.pool.QueryRow(ctx, `SELECT fenced, coalesce(ids, '{}') FROM commit_marks WHERE token = $1::uuid`, mark).Scan(&fenced, &ids); err != nil {
			return err
		}
		committed = !fenced
		return nil
	})
	return ids, committed, err
}

// CutCommits is how many statements of this Store lost their answer and had
// their outcome found (each was run again, or found committed).
func (s *Store) CutCommits() int64 { return s.cutCommits.Load() }

// PruneCommitMarks deletes marks older than age (at most limit): a lost
// answer is looked into within seconds. It returns how many it deleted.
func (s *Store) PruneCommitMarks(ctx context.Context, age time.Duration, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM commit_marks WHERE token IN (
		SELECT token FROM commit_marks WHERE made_at < now() - $1 * interval '1 millisecond' ORDER BY made_at LIMIT $2)`,
		age.Milliseconds(), limit)
	return tag.RowsAffected(), interpretError(err)
}
