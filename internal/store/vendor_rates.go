package store

import (
	"cmp"
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// VendorRate is what one vendor answered for one segment of rows and one
// stage: the rows asked, those it answered, and the credits it billed for
// them, in its own credits; of one tenant's rows (tenant_vendor_rates), or
// of every tenant's (Tenant "": vendor_rates, the pool). As an argument of
// AddVendorRates it is an increment of both.
type VendorRate struct {
	Tenant  string
	Vendor  string
	Segment domain.Segment
	Stage   domain.Stage
	Asked   int64
	Found   int64
	Credits int64
}

// vendorRateKey identifies a vendor_rates row (tenant "") or a
// tenant_vendor_rates row.
type vendorRateKey struct {
	tenant, vendor, segment string
	stage                   domain.Stage
}

// AddVendorRates adds each increment to its tenant's (tenant, vendor,
// segment, stage) row of tenant_vendor_rates (an increment of no tenant
// adds to none) and to its (vendor, segment, stage) row of the pool,
// vendor_rates, in one transaction. Increments of one row are summed first,
// and rows are written in key order, the tenants' table first, so that two
// workers adding at once take their row locks in one order and never
// deadlock. A deadlock or a cut connection before sending is run again; a
// lost commit is not (the rates are estimates: a batch counted twice or
// lost is noise, not money).
func (s *Store) AddVendorRates(ctx context.Context, incs []VendorRate) error {
	sums := map[vendorRateKey]VendorRate{}
	add := func(k vendorRateKey, r VendorRate) {
		t := sums[k]
		t.Asked += r.Asked
		t.Found += r.Found
		t.Credits += r.Credits
		sums[k] = t
	}
	for _, r := range incs {
		if r.Asked <= 0 && r.Credits <= 0 {
			continue
		}
		add(vendorRateKey{"", r.Vendor, r.Segment.String(), r.Stage}, r)
		if r.Tenant != "" {
			add(vendorRateKey{r.Tenant, r.Vendor, r.Segment.String(), r.Stage}, r)
		}
	}
	if len(sums) == 0 {
		return nil
	}
	keys := make([]vendorRateKey, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b vendorRateKey) int {
		return cmp.Or(cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.vendor, b.vendor), cmp.Compare(a.segment, b.segment), cmp.Compare(a.stage, b.stage))
	})
	var tenants, vendors, segments, stages []string
	var asked, found, credits []int64
	var pool int // keys[:pool] are the pool's ("" sorts first)
	for _, k := range keys {
		if k.tenant == "" {
			pool++
		}
		t := sums[k]
		tenants, vendors, segments, stages = append(tenants, k.tenant), append(vendors, k.vendor), append(segments, k.segment), append(stages, string(k.stage))
		asked, found, credits = append(asked, t.Asked), append(found, min(t.Found, t.Asked)), append(credits, max(t.Credits, 0))
	}
	return s.retry(ctx, false, func() error {
		return s.inTx(ctx, func(tx pgx.Tx) error {
			if pool < len(keys) {
				if _, err := exec(ctx, tx, `INSERT INTO tenant_vendor_rates AS r (tenant, vendor, segment, stage, asked, found, credits)
					SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[])
					ON CONFLICT (tenant, vendor, segment, stage) DO UPDATE SET asked = r.asked + excluded.asked,
						found = r.found + excluded.found, credits = r.credits + excluded.credits, updated_at = now()`,
					tenants[pool:], vendors[pool:], segments[pool:], stages[pool:], asked[pool:], found[pool:], credits[pool:]); err != nil {
					return err
				}
			}
			_, err := exec(ctx, tx, `INSERT INTO vendor_rates AS r (vendor, segment, stage, asked, found, credits)
				SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[])
				ON CONFLICT (vendor, segment, stage) DO UPDATE SET asked = r.asked + excluded.asked,
					found = r.found + excluded.found, credits = r.credits + excluded.credits, updated_at = now()`,
				vendors[:pool], segments[:pool], stages[:pool], asked[:pool], found[:pool], credits[:pool])
			return err
		})
	})
}

// VendorRates reads the pool: every row of vendor_rates (every tenant's
// rows), by vendor, segment and stage. A row whose segment no longer
// parses is left out.
func (s *Store) VendorRates(ctx context.Context) ([]VendorRate, error) {
	rows, err := s.pool.Query(ctx, `SELECT vendor, segment, stage, asked, found, credits FROM vendor_rates
		ORDER BY vendor, segment, stage`)
	return collectVendorRates(rows, err, "")
}

// TenantVendorRates reads what tenant's own rows taught
// (tenant_vendor_rates), by vendor, segment and stage. A row whose segment
// no longer parses is left out.
func (s *Store) TenantVendorRates(ctx context.Context, tenant string) ([]VendorRate, error) {
	rows, err := s.pool.Query(ctx, `SELECT vendor, segment, stage, asked, found, credits FROM tenant_vendor_rates
		WHERE tenant = $1 ORDER BY vendor, segment, stage`, tenant)
	return collectVendorRates(rows, err, tenant)
}

// collectVendorRates reads rows of (vendor, segment, stage, asked, found,
// credits), of tenant ("" the pool's), leaving out a segment that no
// longer parses.
func collectVendorRates(rows pgx.Rows, err error, tenant string) ([]VendorRate, error) {
	if err != nil {
		return nil, interpretError(err)
	}
	var out []VendorRate
	var seg string
	r := VendorRate{Tenant: tenant}
	_, err = pgx.ForEachRow(rows, []any{&r.Vendor, &seg, &r.Stage, &r.Asked, &r.Found, &r.Credits}, func() error {
		if g, ok := domain.ParseSegment(seg); ok {
			r.Segment = g
			out = append(out, r)
		}
		return nil
	})
	return out, interpretError(err)
}
