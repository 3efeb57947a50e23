package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Lease is a named leadership (one scheduler at a time does the sweeps),
// held through a row of leader_leases, never through session state: no
// advisory lock held on a pooled connection, which PgBouncer's transaction
// pooling cannot keep, and which a failover drops. The holder renews the row
// (a new version) on every Hold; another process takes it over once it has
// seen one version, unchanged, for the lease's TTL by its own clock. Only
// durations on one clock count, so the processes' clocks need not agree.
//
// A Lease is used by one goroutine.
type Lease struct {
	s            *Store
	name, holder string
	ttl          time.Duration
	now          func() time.Time

	seen    leaseRow  // the row as last read
	seenAt  time.Time // when seen last changed, by this process's clock
	renewed time.Time // when the renewal that holds the lease was sent; zero: not held
}

type leaseRow struct {
	holder  string
	version int64
	ttl     time.Duration
	found   bool
}

// NewLease returns the lease name as holder (a name unique to this process)
// sees it, not yet held. now is the clock its durations are measured on
// (nil: time.Now).
func (s *Store) NewLease(name, holder string, ttl time.Duration, now func() time.Time) *Lease {
	if now == nil {
		now = time.Now
	}
	return &Lease{s: s, name: name, holder: holder, ttl: ttl, now: now}
}

// Holder is the name this process holds the lease under.
func (l *Lease) Holder() string { return l.holder }

// Held reports whether the lease is this process's now, by its own clock:
// taken or renewed less than the TTL ago. Another process takes it over no
// sooner than a TTL after it saw the last renewal, which came after that
// renewal was sent.
func (l *Lease) Held() bool {
	return !l.renewed.IsZero() && l.now().Sub(l.renewed) < l.ttl
}

// Hold renews the lease when this process holds it, else takes it if it is
// free or its holder has not renewed it for its TTL. It reports whether this
// process holds the lease now. When the database cannot be reached, a lease
// held stays held until its TTL has passed since the last renewal.
func (l *Lease) Hold(ctx context.Context) (bool, error) {
	start := l.now()
	if !l.renewed.IsZero() {
		var version int64
		err := l.s.pool.QueryRow(ctx, `UPDATE leader_leases SET version = version + 1, ttl_ms = $4, renewed_at = now()
			WHERE name = $1 AND holder = $2 AND version = $3 RETURNING version`,
			l.name, l.holder, l.seen.version, l.ttl.Milliseconds()).Scan(&version)
		switch {
		case err == nil:
			l.seen = leaseRow{holder: l.holder, version: version, ttl: l.ttl, found: true}
			l.seenAt, l.renewed = start, start
			return true, nil
		case !errors.Is(err, pgx.ErrNoRows):
			// Not known whether the renewal committed: the lease is held by
			// the renewal before, for what is left of its TTL.
			return l.Held(), interpretError(err)
		}
		l.renewed = time.Time{} // taken over: another process saw it unrenewed for its TTL
	}
	row, err := l.read(ctx)
	if err != nil {
		return false, err
	}
	if row != l.seen {
		l.seen, l.seenAt = row, start
	}
	var version int64
	switch {
	case !row.found:
		err = l.s.pool.QueryRow(ctx, `INSERT INTO leader_leases (name, holder, version, ttl_ms) VALUES ($1, $2, 1, $3)
			ON CONFLICT (name) DO NOTHING RETURNING version`, l.name, l.holder, l.ttl.Milliseconds()).Scan(&version)
	case row.holder == l.holder || start.Sub(l.seenAt) >= row.ttl:
		// Ours from before (a renewal whose answer was lost), or unrenewed
		// for its TTL: take it, unless it moved meanwhile.
		err = l.s.pool.QueryRow(ctx, `UPDATE leader_leases SET holder = $2, version = version + 1, ttl_ms = $4, renewed_at = now()
			WHERE name = $1 AND version = $3 RETURNING version`, l.name, l.holder, row.version, l.ttl.Milliseconds()).Scan(&version)
	default:
		return false, nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // another process was quicker
	}
	if err != nil {
		return false, interpretError(err)
	}
	l.seen = leaseRow{holder: l.holder, version: version, ttl: l.ttl, found: true}
	l.seenAt, l.renewed = start, start
	return true, nil
}

func (l *Lease) read(ctx context.Context) (leaseRow, error) {
	var row leaseRow
	var ttlMS int64
	err := l.s.pool.QueryRow(ctx, `SELECT holder, version, ttl_ms FROM leader_leases WHERE name = $1`, l.name).
		Scan(&row.holder, &row.version, &ttlMS)
	if errors.Is(err, pgx.ErrNoRows) {
		return leaseRow{}, nil
	}
	if err != nil {
		return leaseRow{}, interpretError(err)
	}
	row.ttl, row.found = time.Duration(ttlMS)*time.Millisecond, true
	return row, nil
}

// Release gives the lease up (a graceful stop): another process takes it at
// its next Hold, without waiting for the TTL.
func (l *Lease) Release(ctx context.Context) error {
	if l.renewed.IsZero() {
		return nil
	}
	l.renewed = time.Time{}
	_, err := l.s.pool.Exec(ctx, `DELETE FROM leader_leases WHERE name = $1 AND holder = $2`, l.name, l.holder)
	return interpretError(err)
}
