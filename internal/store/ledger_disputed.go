package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// DisputedCharge is a call whose vendor claimed a charge outside its
// contract: settled at the contract's price (Charged, in budget units),
// the vendor's claim (Claimed, in its credits) kept beside it.
type DisputedCharge struct {
	LedgerID  int64      `json:"ledger_id"`
	Vendor    string     `json:"vendor"`
	Endpoint  string     `json:"endpoint"`
	Claimed   int64      `json:"claimed"`
	Charged   int64      `json:"charged"`
	SettledAt *time.Time `json:"settled_at"`
}

// JobDisputedCharges lists the job's disputed calls, in ledger order
// (calls made before vendors had names are the default vendor's, "vendor").
func (s *Store) JobDisputedCharges(ctx context.Context, jobID string) ([]DisputedCharge, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, coalesce(vendor, 'vendor'), endpoint, disputed_charge, coalesce(charged, reserved), settled_at
		FROM credit_ledger WHERE job_id = $1 AND disputed_charge IS NOT NULL ORDER BY id`, jobID)
	if err != nil {
		return nil, interpretError(err)
	}
	out := []DisputedCharge{}
	var d DisputedCharge
	_, err = pgx.ForEachRow(rows, []any{&d.LedgerID, &d.Vendor, &d.Endpoint, &d.Claimed, &d.Charged, &d.SettledAt}, func() error {
		out = append(out, d)
		return nil
	})
	return out, interpretError(err)
}
