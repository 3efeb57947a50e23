package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// LedgerTotals sums a job's ledger.
type LedgerTotals struct {
	Calls    int
	Reserved int64 // still held
	Charged  int64 // settled and unknown
}

// JobLedger sums the ledger of one job.
func (s *Store) JobLedger(ctx context.Context, jobID string) (LedgerTotals, error) {
	var t LedgerTotals
	err := s.pool.QueryRow(ctx, `SELECT count(*),
			coalesce(sum(reserved) FILTER (WHERE status = 'reserved'), 0),
			coalesce(sum(charged) FILTER (WHERE status IN ('settled', 'unknown')), 0)
		FROM credit_ledger WHERE job_id = $1`, jobID).Scan(&t.Calls, &t.Reserved, &t.Charged)
	return t, interpretError(err)
}

// StageCost is what one stage of a job cost.
type StageCost struct {
	Calls   int   `json:"calls"`
	Credits int64 `json:"credits"`
}

// JobCosts answers "what did job J cost, by stage". A bulk call's charge is
// split by stage with the cost table's figures recorded on its ledger row;
// what the split does not explain is reported as stage domain.StageBulk.
func (s *Store) JobCosts(ctx context.Context, jobID string) (map[domain.Stage]StageCost, error) {
	rows, err := s.pool.Query(ctx, `SELECT stage, coalesce(charged, 0), coalesce(stage_credits::text, '') FROM credit_ledger
		WHERE job_id = $1 AND status IN ('settled', 'unknown')`, jobID)
	if err != nil {
		return nil, interpretError(err)
	}
	out := map[domain.Stage]StageCost{}
	var stage domain.Stage
	var split string
	var charged int64
	_, err = pgx.ForEachRow(rows, []any{&stage, &charged, &split}, func() error {
		if stage != domain.StageBulk || split == "" {
			c := out[stage]
			c.Calls++
			c.Credits += charged
			out[stage] = c
			return nil
		}
		var m map[domain.Stage]int64
		if err := json.Unmarshal([]byte(split), &m); err != nil {
			return err
		}
		rest := charged
		for st, n := range m {
			n = min(n, rest)
			rest -= n
			c := out[st]
			c.Credits += n
			out[st] = c
		}
		c := out[domain.StageBulk]
		c.Calls++
		c.Credits += rest
		out[domain.StageBulk] = c
		return nil
	})
	return out, interpretError(err)
}

// AccountUsage is a vendor key's credits in one month.
type AccountUsage struct {
	Account          string
	Month            time.Time
	Reserved, Spent  int64
	CreditsRemaining *int64 // the vendor's last X-Credits-Remaining
	Calls            int
}

// AccountMonth answers "what did this key spend this month" (month: any day of it, UTC).
func (s *Store) AccountMonth(ctx context.Context, account string, month time.Time) (AccountUsage, error) {
	u := AccountUsage{Account: account}
	m := time.Date(month.UTC().Year(), month.UTC().Month(), 1, 0, 0, 0, 0, time.UTC)
	err := s.pool.QueryRow(ctx, `SELECT $2::date, coalesce(a.reserved, 0), coalesce(a.spent, 0), a.credits_remaining,
			(SELECT count(*) FROM credit_ledger WHERE account = $1 AND account_month = $2::date)
		FROM (SELECT 1) one LEFT JOIN account_usage a ON a.account = $1 AND a.month = $2::date`, account, m).
		Scan(&u.Month, &u.Reserved, &u.Spent, &u.CreditsRemaining, &u.Calls)
	return u, interpretError(err)
}

// VendorCost is what one vendor's calls of a job cost, in budget units.
type VendorCost struct {
	Calls   int   `json:"calls"`
	Credits int64 `json:"credits"`
	// Unknown is of Credits, the calls of unknown outcome counted at their
	// worst case.
	Unknown int64 `json:"unknown"`
	// Balance sets the vendor's calls beside its own balance readings.
	Balance Drift `json:"balance"`
}

// JobVendorCosts answers "what did job J cost, by vendor": calls made
// before vendors had names are the default vendor's ("vendor").
func (s *Store) JobVendorCosts(ctx context.Context, jobID string) (map[string]VendorCost, error) {
	rows, err := s.pool.Query(ctx, `SELECT coalesce(vendor, 'vendor'), count(*), coalesce(sum(charged), 0),
			coalesce(sum(charged) FILTER (WHERE status = 'unknown'), 0)
		FROM credit_ledger WHERE job_id = $1 AND status IN ('settled', 'unknown') GROUP BY 1`, jobID)
	if err != nil {
		return nil, interpretError(err)
	}
	out := map[string]VendorCost{}
	var v string
	var c VendorCost
	_, err = pgx.ForEachRow(rows, []any{&v, &c.Calls, &c.Credits, &c.Unknown}, func() error {
		out[v] = c
		return nil
	})
	if err != nil {
		return nil, interpretError(err)
	}
	drifts, err := s.JobDriftByVendor(ctx, jobID)
	for v, d := range drifts {
		c := out[v]
		c.Balance = d
		out[v] = c
	}
	return out, err
}
