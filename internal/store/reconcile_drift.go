package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Drift sets the vendor's balance readings (X-Credits-Remaining, kept on each
// call's ledger row, in the ledger's order) beside the ledger, over a set of
// calls: the second witness of what was billed. The vendor's balance before
// the first call it counted is the highest reading plus that call's reported
// charge; after the last, the lowest reading. What it billed in between is
// the difference, set against what the ledger counts as spent over the same
// calls. Drift is never corrected: it is shown, so that someone looks.
//
// The readings witness the calls the vendor counted between them: a call
// billed outside them (its answer lost, and nothing read after it), another
// job's calls on the same key (for a job's drift), or a top-up of the
// vendor balance show as drift too.
type Drift struct {
	// Readings is how many calls carried X-Credits-Remaining.
	Readings int `json:"readings"`
	// BalanceBefore and BalanceAfter are the vendor's balance before the
	// first call read and after the last; nil without readings.
	BalanceBefore *int64 `json:"balance_before"`
	BalanceAfter  *int64 `json:"balance_after"`
	// VendorBilled is BalanceBefore - BalanceAfter.
	VendorBilled int64 `json:"vendor_billed"`
	// LedgerSpent is what the ledger counts as spent (settled and unknown).
	LedgerSpent int64 `json:"ledger_spent"`
	// Drift is LedgerSpent - VendorBilled (0 without readings): above 0 the
	// ledger counts more than the readings show, below 0 less.
	Drift int64 `json:"drift"`
}

// driftColumns reads a Drift from the credit_ledger rows of a query.
const driftColumns = `count(credits_remaining),
	max(credits_remaining + CASE WHEN charge_reported THEN coalesce(charged, 0) ELSE 0 END),
	min(credits_remaining),
	coalesce(sum(charged) FILTER (WHERE status IN ('settled', 'unknown')), 0)`

func (d *Drift) fill() {
	if d.Readings > 0 && d.BalanceBefore != nil && d.BalanceAfter != nil {
		d.VendorBilled = *d.BalanceBefore - *d.BalanceAfter
		d.Drift = d.LedgerSpent - d.VendorBilled
	}
}

// JobDrift compares a job's ledger with the vendor's balance readings of its calls.
func (s *Store) JobDrift(ctx context.Context, jobID string) (Drift, error) {
	var d Drift
	err := s.pool.QueryRow(ctx, `SELECT `+driftColumns+` FROM credit_ledger WHERE job_id = $1`, jobID).
		Scan(&d.Readings, &d.BalanceBefore, &d.BalanceAfter, &d.LedgerSpent)
	d.fill()
	return d, interpretError(err)
}

// DayDrift is the drift of a vendor key over one day (UTC).
type DayDrift struct {
	Day time.Time `json:"day"`
	Drift
}

// AccountDrift compares a vendor key's ledger with the vendor's balance
// readings, day by day (UTC), from the day of from to the day of to, both
// in one calendar month (to is cut to the end of from's month).
func (s *Store) AccountDrift(ctx context.Context, account string, from, to time.Time) ([]DayDrift, error) {
	from = from.UTC().Truncate(24 * time.Hour)
	m := time.Date(from.Year(), from.Month(), 1, 0, 0, 0, 0, time.UTC)
	end := to.UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	if next := m.AddDate(0, 1, 0); end.After(next) {
		end = next
	}
	rows, err := s.pool.Query(ctx, `SELECT (reserved_at AT TIME ZONE 'UTC')::date AS day, `+driftColumns+`
		FROM credit_ledger WHERE account = $1 AND account_month = $2::date AND reserved_at >= $3 AND reserved_at < $4
		GROUP BY day ORDER BY day`, account, m, from, end)
	if err != nil {
		return nil, interpretError(err)
	}
	var out []DayDrift
	var d DayDrift
	_, err = pgx.ForEachRow(rows, []any{&d.Day, &d.Readings, &d.BalanceBefore, &d.BalanceAfter, &d.LedgerSpent}, func() error {
		d.fill()
		out = append(out, d)
		d = DayDrift{}
		return nil
	})
	return out, interpretError(err)
}

// JobDriftByVendor is JobDrift for each vendor of a job apart: a vendor's
// balance readings witness its own calls only. Calls made before vendors
// had names are the default vendor's ("vendor").
func (s *Store) JobDriftByVendor(ctx context.Context, jobID string) (map[string]Drift, error) {
	rows, err := s.pool.Query(ctx, `SELECT coalesce(vendor, 'vendor'), `+driftColumns+` FROM credit_ledger WHERE job_id = $1 GROUP BY 1`, jobID)
	if err != nil {
		return nil, interpretError(err)
	}
	out := map[string]Drift{}
	var v string
	var d Drift
	_, err = pgx.ForEachRow(rows, []any{&v, &d.Readings, &d.BalanceBefore, &d.BalanceAfter, &d.LedgerSpent}, func() error {
		d.fill()
		out[v] = d
		d = Drift{}
		return nil
	})
	return out, interpretError(err)
}
