package store

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// Job is one submitted list.
type Job struct {
	ID              string
	Tenant          string
	Name            string
	State           domain.JobState
	StateReason     string
	Lookups         []domain.Stage
	Roles           []string
	BudgetCredits   *int64
	CreditsReserved int64
	CreditsSpent    int64
	MaxAge          time.Duration
	TotalRows       int
	ChunkCount      int
	SourceFormat    string
	IdempotencyKey  *string
	CallbackURL     string // called when the job ends; "" for none
	Upload          Upload // what the upload held
	CreatedAt       time.Time
	StartedAt       *time.Time
	FinishedAt      *time.Time
	UpdatedAt       time.Time
	// PurgedAt is when retention removed the job's rows (the job keeps its
	// counts and credits); nil: not purged.
	PurgedAt *time.Time
	// Vendors is the job's own vendor order (names of the vendors file);
	// nil: the tenants' order.
	Vendors []string
}

// Upload is what a job's upload held, as its status shows it.
type Upload struct {
	Columns         map[string]string // uploaded header -> the field it was read as
	ExtraColumns    []string          // uploaded headers kept as extra columns, in file order
	RowsUploaded    *int              // data rows of the upload; nil: not recorded (member syncs)
	DistinctLookups *int              // distinct inputs among the lookups; nil: not recorded
}

const jobColumns = `id::text, tenant, name, state, state_reason, lookups, roles, budget_credits,
	credits_reserved, credits_spent, max_age_seconds, total_rows, chunk_count, source_format,
	idempotency_key, coalesce(callback_url, ''), column_map, extra_columns, rows_uploaded, distinct_lookups,
	created_at, started_at, finished_at, updated_at, purged_at, vendors`

func scanJob(row pgx.Row) (Job, error) {
	var j Job
	var maxAge int64
	err := row.Scan(jobDest(&j, &maxAge)...)
	if err != nil {
		return Job{}, interpretError(err)
	}
	j.MaxAge = time.Duration(maxAge) * time.Second
	return j, nil
}

// jobDest is where the columns of jobColumns scan to.
func jobDest(j *Job, maxAge *int64) []any {
	return []any{&j.ID, &j.Tenant, &j.Name, &j.State, &j.StateReason, &j.Lookups, &j.Roles, &j.BudgetCredits,
		&j.CreditsReserved, &j.CreditsSpent, maxAge, &j.TotalRows, &j.ChunkCount, &j.SourceFormat,
		&j.IdempotencyKey, &j.CallbackURL, &j.Upload.Columns, &j.Upload.ExtraColumns, &j.Upload.RowsUploaded, &j.Upload.DistinctLookups,
		&j.CreatedAt, &j.StartedAt, &j.FinishedAt, &j.UpdatedAt, &j.PurgedAt, &j.Vendors}
}
