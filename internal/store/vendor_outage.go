package store

import (
	"context"
	"errors"
	"time"
)

// VendorOutage is a vendor taken out of the waterfall for a tenant: it
// said it was out of credits, or refused its key.
type VendorOutage struct {
	Vendor string    `json:"vendor"`
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
}

// TakeVendorOut takes vendor out of the tenant's waterfall for d (again
// from now when it was out already). It reports whether it was in.
func (s *Store) TakeVendorOut(ctx context.Context, tenant, vendor, reason string, d time.Duration) (bool, error) {
	if err := needTenant(tenant); err != nil {
		return false, err
	}
	var was bool
	err := s.pool.QueryRow(ctx, `
		WITH old AS (SELECT until > now() AS out FROM vendor_outages WHERE tenant = $1 AND vendor = $2)
		INSERT INTO vendor_outages (tenant, vendor, reason, until) VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond')
		ON CONFLICT (tenant, vendor) DO UPDATE SET reason = excluded.reason, until = excluded.until,
			since = CASE WHEN vendor_outages.until > now() THEN vendor_outages.since ELSE now() END
		RETURNING coalesce((SELECT out FROM old), false)`, tenant, vendor, reason, d.Milliseconds()).Scan(&was)
	return !was, interpretError(err)
}

// VendorsOut are the vendors out of the tenant's waterfall now.
func (s *Store) VendorsOut(ctx context.Context, tenant string) ([]VendorOutage, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT vendor, reason, since, until FROM vendor_outages
		WHERE tenant = $1 AND until > now() ORDER BY vendor`, tenant)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []VendorOutage
	for rows.Next() {
		var o VendorOutage
		if err := rows.Scan(&o.Vendor, &o.Reason, &o.Since, &o.Until); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, o)
	}
	return out, interpretError(rows.Err())
}

// AddVendorSkips counts, per vendor, rows of a job that did not ask it
// because it was out of the waterfall.
func (s *Store) AddVendorSkips(ctx context.Context, jobID string, rows map[string]int64) error {
	if len(rows) == 0 {
		return nil
	}
	vendors := make([]string, 0, len(rows))
	counts := make([]int64, 0, len(rows))
	for v, n := range rows {
		vendors = append(vendors, v)
		counts = append(counts, n)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO vendor_skips (job_id, vendor, rows)
		SELECT $1, v, n FROM unnest($2::text[], $3::bigint[]) AS x(v, n) ORDER BY v
		ON CONFLICT (job_id, vendor) DO UPDATE SET rows = vendor_skips.rows + excluded.rows`, jobID, vendors, counts)
	return interpretError(err)
}

// VendorSkips are the rows of a job that skipped each vendor out of the
// waterfall, by vendor.
func (s *Store) VendorSkips(ctx context.Context, jobID string) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT vendor, rows FROM vendor_skips WHERE job_id = $1`, jobID)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var v string
		var n int64
		if err := rows.Scan(&v, &n); err != nil {
			return nil, interpretError(err)
		}
		out[v] = n
	}
	return out, interpretError(rows.Err())
}

// BringVendorBack puts vendor back in the waterfall of tenant ("": of
// every tenant) at once: the operator says its credits were bought, its
// quota renewed or its key fixed. It reports how many tenants had it out.
func (s *Store) BringVendorBack(ctx context.Context, vendor, tenant string) (int64, error) {
	if vendor == "" {
		return 0, errors.New("store: bring back which vendor?")
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM vendor_outages WHERE vendor = $1 AND ($2 = '' OR tenant = $2) AND until > now()`, vendor, tenant)
	if err != nil {
		return 0, interpretError(err)
	}
	return tag.RowsAffected(), nil
}
