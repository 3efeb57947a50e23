package service

import (
	"context"
	"math"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// JobStatus is the status of a job: the canonical view every front door
// shows (GET /v1/jobs/{id}, and the answer of submit and cancel).
type JobStatus struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	State       domain.JobState `json:"state"`
	StateReason string          `json:"state_reason"`
	Rows        RowCounts       `json:"rows"`
	Credits     JobCredits      `json:"credits"`
	Progress    float64         `json:"progress"`
	ETASeconds  *int64          `json:"eta_seconds"`
	Lookups     []domain.Stage  `json:"lookups"`
	Roles       []string        `json:"roles"`
	UploadFields
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	// PurgedAt is when retention removed the job's rows and results; its
	// counts and credits stay. Null: not purged.
	PurgedAt *time.Time `json:"purged_at"`
	// VendorSkips counts, by vendor, the rows that went without a vendor
	// taken out of the waterfall (out of credits, its key refused); absent
	// when none did. VendorsOut are those of the tenant's vendors out now.
	VendorSkips map[string]int64     `json:"vendor_skips,omitempty"`
	VendorsOut  []store.VendorOutage `json:"vendors_out,omitempty"`
	// Watchable: a watch can be made of the job's list once it finishes
	// (not a watch's own run, not a platform sync). The web page offers it.
	Watchable bool `json:"-"`
}

// UploadFields are what a job's upload held, in its status and in the
// estimate: rows in the file, distinct lookups, which header went to which
// field, and the columns kept as extras.
type UploadFields struct {
	RowsUploaded    *int              `json:"rows_uploaded"`
	DistinctLookups *int              `json:"distinct_lookups"`
	Columns         map[string]string `json:"columns"`
	ExtraColumns    []string          `json:"extra_columns"`
}

// UploadFieldsOf is the view of what an upload held.
func UploadFieldsOf(u store.Upload) UploadFields {
	f := UploadFields{RowsUploaded: u.RowsUploaded, DistinctLookups: u.DistinctLookups, Columns: u.Columns, ExtraColumns: nonNil(u.ExtraColumns)}
	if f.Columns == nil {
		f.Columns = map[string]string{}
	}
	return f
}

// RowCounts are a job's rows by state.
type RowCounts struct {
	Total     int `json:"total"`
	Pending   int `json:"pending"`
	InFlight  int `json:"in_flight"`
	RetryWait int `json:"retry_wait"`
	Matched   int `json:"matched"`
	NoMatch   int `json:"no_match"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
}

func (c RowCounts) terminal() int { return c.Matched + c.NoMatch + c.Failed + c.Skipped }

// JobCredits are a job's budget and what it reserved and spent.
type JobCredits struct {
	Budget   *int64 `json:"budget"`
	Reserved int64  `json:"reserved"`
	Spent    int64  `json:"spent"`
	// Unsettled, of a finished job: the credits of its calls whose outcome
	// cannot be known (counted in spent at their worst case, or still
	// reserved), and UnsettledReason says why; 0 and "" when its credits are
	// final (always 0 while the job runs).
	Unsettled       int64  `json:"unsettled"`
	UnsettledReason string `json:"unsettled_reason"`
}

// withUnsettled adds a finished job's unsettled credits to its status.
func (s *Service) withUnsettled(ctx context.Context, st JobStatus) (JobStatus, error) {
	if st.FinishedAt == nil {
		return st, nil
	}
	u, err := s.store.JobUnsettled(ctx, st.ID)
	if err != nil {
		return JobStatus{}, err
	}
	st.Credits.Unsettled, st.Credits.UnsettledReason = u.Credits, u.Reason()
	return st, nil
}

// StatusOf builds the status of job from its row counts by state, at now.
func StatusOf(job store.Job, counts map[domain.RowState]int, now time.Time) JobStatus {
	rc := RowCounts{
		Pending:   counts[domain.RowPending],
		InFlight:  counts[domain.RowInFlight],
		RetryWait: counts[domain.RowRetryWait],
		Matched:   counts[domain.RowMatched],
		NoMatch:   counts[domain.RowNoMatch],
		Failed:    counts[domain.RowFailed],
		Skipped:   counts[domain.RowSkipped],
	}
	rc.Total = rc.Pending + rc.InFlight + rc.RetryWait + rc.terminal()
	st := JobStatus{
		ID:           job.ID,
		Name:         job.Name,
		State:        job.State,
		StateReason:  job.StateReason,
		Rows:         rc,
		Credits:      JobCredits{Budget: job.BudgetCredits, Reserved: job.CreditsReserved, Spent: job.CreditsSpent},
		Lookups:      nonNil(job.Lookups),
		Roles:        nonNil(job.Roles),
		UploadFields: UploadFieldsOf(job.Upload),
		CreatedAt:    job.CreatedAt.UTC(),
		StartedAt:    utc(job.StartedAt),
		FinishedAt:   utc(job.FinishedAt),
		PurgedAt:     utc(job.PurgedAt),
		Watchable:    job.SourceFormat != "watch" && job.SourceFormat != "platform",
	}
	done := rc.terminal()
	switch {
	case rc.Total > 0:
		st.Progress = float64(done) / float64(rc.Total)
	case job.FinishedAt != nil:
		st.Progress = 1
	}
	st.ETASeconds = eta(job, rc.Total-done, done, now)
	return st
}

// eta estimates the seconds until the open rows are done, from the rate of
// finished rows since the job started; nil when unknown (not started,
// paused, nothing finished yet).
func eta(job store.Job, open, done int, now time.Time) *int64 {
	if job.FinishedAt != nil || open == 0 {
		zero := int64(0)
		return &zero
	}
	if job.StartedAt == nil || done == 0 || job.State == domain.JobPaused {
		return nil
	}
	elapsed := now.Sub(*job.StartedAt).Seconds()
	if elapsed <= 0 {
		return nil
	}
	secs := int64(math.Ceil(float64(open) * elapsed / float64(done)))
	return &secs
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// status loads the row counts of job (already the tenant's) and builds its status.
func (s *Service) status(ctx context.Context, job store.Job) (JobStatus, error) {
	counts, err := s.store.RowCounts(ctx, job.ID)
	if err != nil {
		return JobStatus{}, err
	}
	st := StatusOf(job, counts, s.now())
	if st.VendorSkips, err = s.store.VendorSkips(ctx, job.ID); err != nil {
		return JobStatus{}, err
	}
	if len(st.VendorSkips) == 0 {
		st.VendorSkips = nil
	} else if st.VendorsOut, err = s.store.VendorsOut(ctx, job.Tenant); err != nil {
		return JobStatus{}, err
	}
	return s.withUnsettled(ctx, st)
}
