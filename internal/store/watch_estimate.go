package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// JobWatchInputs is what a watch of the tenant's finished job would hold,
// without making it: the job's distinct inputs as CreateWatch copies them,
// and the job's lookups (ErrNotFound, ErrJobNotFinished as CreateWatch).
func (s *Store) JobWatchInputs(ctx context.Context, tenant, jobID string) ([]WatchInput, []domain.Stage, error) {
	if err := needTenant(tenant); err != nil {
		return nil, nil, err
	}
	var lookups []domain.Stage
	var finished *time.Time
	err := s.pool.QueryRow(ctx, `SELECT lookups, finished_at FROM jobs WHERE tenant = $1 AND id::text = $2 AND source_format <> 'platform'`,
		tenant, jobID).Scan(&lookups, &finished)
	if err != nil {
		return nil, nil, interpretError(err)
	}
	if finished == nil {
		return nil, nil, ErrJobNotFinished
	}
	rows, err := s.pool.Query(ctx, `SELECT row_number() OVER (ORDER BY d.input_row, d.id)::int, coalesce(d.ref, ''), d.input_kind,
			coalesce(d.profile_url, ''), coalesce(d.name, ''), coalesce(d.company, ''), coalesce(d.domain, ''), coalesce(d.email, ''), coalesce(d.role, '')
		`+watchInputsFrom+` WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.id = $2::uuid AND j.tenant = $1)
		ORDER BY 1`, tenant, jobID)
	if err != nil {
		return nil, nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[WatchInput])
	return out, lookups, interpretError(err)
}
