package store

import (
	"context"
	"github.com/enrichq/enrichq/internal/domain"

	"github.com/jackc/pgx/v5"
)

// The reads of this file are the chaos rig's and the tests' (dev/chaos/rig's
// checks, dev/chaos's faults): a job's ledger line by line, the whole ledger
// summed, the reservations still open, the jobs of an Idempotency-Key. No
// service calls them. They stay in the store, not in storetest, because the
// rig reads through a store it opened itself (store.Open), with its pool.

// LedgerEntry is one vendor call in the credit ledger.
type LedgerEntry struct {
	ID             int64
	IdempotencyKey string
	Status         string // LedgerReserved, LedgerSettled, LedgerReleased or LedgerUnknown
	Reserved       int64
	Charged        int64 // 0 while reserved
	Error          string
	Vendor         string // the vendor's configured name; "" when not recorded
	Stage          domain.Stage
}

// LedgerEntries lists the calls of a job in the credit ledger, oldest first:
// what an audit of the job's money against the vendor's bill reads.
func (s *Store) LedgerEntries(ctx context.Context, jobID string) ([]LedgerEntry, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, idempotency_key, status, reserved, coalesce(charged, 0), error, coalesce(vendor, ''), stage
		FROM credit_ledger WHERE job_id = $1 ORDER BY id`, jobID)
	if err != nil {
		return nil, interpretError(err)
	}
	var e LedgerEntry
	var out []LedgerEntry
	_, err = pgx.ForEachRow(rows, []any{&e.ID, &e.IdempotencyKey, &e.Status, &e.Reserved, &e.Charged, &e.Error, &e.Vendor, &e.Stage}, func() error {
		out = append(out, e)
		return nil
	})
	return out, interpretError(err)
}

// LedgerBook is the credit ledger of every job, summed.
type LedgerBook struct {
	Keys     map[string]bool // every Idempotency-Key in the ledger
	Charged  int64           // settled and unknown
	Unknown  int64           // of Charged, by calls of unknown outcome
	Reserved int64           // still held
}

// LedgerBook sums the whole credit ledger: what an audit of every job
// against the vendor's whole bill reads.
func (s *Store) LedgerBook(ctx context.Context) (LedgerBook, error) {
	b := LedgerBook{Keys: map[string]bool{}}
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT idempotency_key FROM credit_ledger`)
	if err != nil {
		return b, interpretError(err)
	}
	var k string
	if _, err := pgx.ForEachRow(rows, []any{&k}, func() error { b.Keys[k] = true; return nil }); err != nil {
		return b, interpretError(err)
	}
	err = s.pool.QueryRow(ctx, `SELECT
			coalesce(sum(charged) FILTER (WHERE status IN ('settled', 'unknown')), 0),
			coalesce(sum(charged) FILTER (WHERE status = 'unknown'), 0),
			coalesce(sum(reserved) FILTER (WHERE status = 'reserved'), 0)
		FROM credit_ledger`).Scan(&b.Charged, &b.Unknown, &b.Reserved)
	return b, interpretError(err)
}

// OpenReservations counts the calls of every job whose reservation is still
// held: settled, released or counted as spent at expiry, it is 0.
func (s *Store) OpenReservations(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM credit_ledger WHERE status = 'reserved'`).Scan(&n)
	return n, interpretError(err)
}

// JobsWithIdempotencyKey lists the ids of the jobs submitted under an
// Idempotency-Key, of every tenant: a retried submit must have made one.
func (s *Store) JobsWithIdempotencyKey(ctx context.Context, key string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id::text FROM jobs WHERE idempotency_key = $1 ORDER BY created_at`, key)
	if err != nil {
		return nil, interpretError(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, interpretError(err)
}
