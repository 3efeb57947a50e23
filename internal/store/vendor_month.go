package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// VendorMonth is what a tenant's calls to one vendor cost in a calendar
// month (UTC), in budget units: settled (and unknown, at their worst case)
// and still reserved. The month is a call's reservation's, as in
// tenant_usage.
type VendorMonth struct {
	Calls    int   `json:"calls"`
	Spent    int64 `json:"spent"`
	Reserved int64 `json:"reserved"`
}

// TenantVendorMonth answers "what did this tenant spend at each vendor in
// the month of at": calls made before vendors had names are the default
// vendor's ("vendor"). Only the tenant's jobs open in the month are read.
func (s *Store) TenantVendorMonth(ctx context.Context, tenant string, at time.Time) (map[string]VendorMonth, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	from := MonthOf(at)
	rows, err := s.pool.Query(ctx, `SELECT coalesce(c.vendor, 'vendor'), count(*),
			coalesce(sum(c.charged) FILTER (WHERE c.status IN ('settled', 'unknown')), 0),
			coalesce(sum(c.reserved) FILTER (WHERE c.status = 'reserved'), 0)
		FROM jobs j JOIN credit_ledger c ON c.job_id = j.id
		WHERE j.tenant = $1 AND (j.finished_at IS NULL OR j.finished_at >= $2)
			AND c.status IN ('settled', 'unknown', 'reserved') AND c.reserved_at >= $2 AND c.reserved_at < $3
		GROUP BY 1`, tenant, from, from.AddDate(0, 1, 0))
	if err != nil {
		return nil, interpretError(err)
	}
	out := map[string]VendorMonth{}
	var v string
	var m VendorMonth
	_, err = pgx.ForEachRow(rows, []any{&v, &m.Calls, &m.Spent, &m.Reserved}, func() error {
		out[v] = m
		return nil
	})
	return out, interpretError(err)
}

// StageAnswers is what one vendor answered for one stage of a job: rows it
// found something for and rows it found nothing for, bought or reused from
// the cache.
type StageAnswers struct {
	Stage     domain.Stage `json:"stage"`
	Vendor    string       `json:"vendor"`
	Found     int64        `json:"found"`
	NoMatch   int64        `json:"no_match"`
	FromCache int64        `json:"from_cache"`
}

// JobStageAnswers answers "who answered each stage of job J": the job's
// results and no-match markers by stage and source (the vendor's name, or
// "platform"), ordered by stage and source. The result tables have no
// index on job_id: they are reached through the job's rows.
func (s *Store) JobStageAnswers(ctx context.Context, jobID string) ([]StageAnswers, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT stage, source, sum(found), sum(missed), sum(cached) FROM (
			SELECT 'profile' AS stage, p.source, 1 AS found, 0 AS missed, p.from_cache::int AS cached
				FROM job_rows r JOIN profile_results p ON p.row_id = r.id WHERE r.job_id = $1
			UNION ALL SELECT 'email', e.source, 1, 0, e.from_cache::int
				FROM job_rows r JOIN email_results e ON e.row_id = r.id WHERE r.job_id = $1
			UNION ALL SELECT 'phone', ph.source, 1, 0, ph.from_cache::int
				FROM job_rows r JOIN phone_results ph ON ph.row_id = r.id WHERE r.job_id = $1
			UNION ALL SELECT n.stage, n.source, 0, 1, n.from_cache::int
				FROM job_rows r JOIN no_matches n ON n.row_id = r.id WHERE r.job_id = $1
		) a GROUP BY stage, source ORDER BY stage, source`, jobID)
	if err != nil {
		return nil, interpretError(err)
	}
	out := []StageAnswers{}
	var a StageAnswers
	_, err = pgx.ForEachRow(rows, []any{&a.Stage, &a.Vendor, &a.Found, &a.NoMatch, &a.FromCache}, func() error {
		out = append(out, a)
		return nil
	})
	return out, interpretError(err)
}
