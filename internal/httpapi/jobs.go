package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// jobStatus is the status body of a job (GET /v1/jobs/{id}, and the answer
// of submit and cancel).
type jobStatus struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	State       domain.JobState `json:"state"`
	StateReason string          `json:"state_reason"`
	Rows        rowCounts       `json:"rows"`
	Credits     jobCredits      `json:"credits"`
	Progress    float64         `json:"progress"`
	ETASeconds  *int64          `json:"eta_seconds"`
	Lookups     []domain.Stage  `json:"lookups"`
	Roles       []string        `json:"roles"`
	uploadFields
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

type rowCounts struct {
	Total     int `json:"total"`
	Pending   int `json:"pending"`
	InFlight  int `json:"in_flight"`
	RetryWait int `json:"retry_wait"`
	Matched   int `json:"matched"`
	NoMatch   int `json:"no_match"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
}

func (c rowCounts) terminal() int { return c.Matched + c.NoMatch + c.Failed + c.Skipped }

type jobCredits struct {
	Budget   *int64 `json:"budget"`
	Reserved int64  `json:"reserved"`
	Spent    int64  `json:"spent"`
}

// statusOf builds the status body of job from its row counts by state, at now.
func statusOf(job store.Job, counts map[domain.RowState]int, now time.Time) jobStatus {
	rc := rowCounts{
		Pending:   counts[domain.RowPending],
		InFlight:  counts[domain.RowInFlight],
		RetryWait: counts[domain.RowRetryWait],
		Matched:   counts[domain.RowMatched],
		NoMatch:   counts[domain.RowNoMatch],
		Failed:    counts[domain.RowFailed],
		Skipped:   counts[domain.RowSkipped],
	}
	rc.Total = rc.Pending + rc.InFlight + rc.RetryWait + rc.terminal()
	st := jobStatus{
		ID:           job.ID,
		Name:         job.Name,
		State:        job.State,
		StateReason:  job.StateReason,
		Rows:         rc,
		Credits:      jobCredits{Budget: job.BudgetCredits, Reserved: job.CreditsReserved, Spent: job.CreditsSpent},
		Lookups:      nonNil(job.Lookups),
		Roles:        nonNil(job.Roles),
		uploadFields: uploadFieldsOf(job.Upload),
		CreatedAt:    job.CreatedAt.UTC(),
		StartedAt:    utc(job.StartedAt),
		FinishedAt:   utc(job.FinishedAt),
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

// status loads the row counts of job and builds its status body.
func (s *server) status(r *http.Request, job store.Job) (jobStatus, error) {
	counts, err := s.Store.RowCounts(r.Context(), job.ID)
	if err != nil {
		return jobStatus{}, err
	}
	return statusOf(job, counts, s.Now()), nil
}

func (s *server) getJob(w http.ResponseWriter, r *http.Request) {
	// The job and its row counts in one round trip: clients poll this.
	tenant, id := tenantFrom(r.Context()), r.PathValue("id")
	job, counts, err := s.statuses.get(r.Context(), tenant, id, func(ctx context.Context) (store.Job, map[domain.RowState]int, error) {
		return s.Store.GetJobStatus(ctx, tenant, id)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, statusOf(job, counts, s.Now()))
}

func (s *server) cancelJob(w http.ResponseWriter, r *http.Request) {
	job, err := s.Store.CancelJob(r.Context(), tenantFrom(r.Context()), r.PathValue("id"))
	s.statuses.drop(tenantFrom(r.Context()), r.PathValue("id"))
	if errors.Is(err, store.ErrConflict) && job.ID != "" {
		err = errorf(http.StatusConflict, "job_finished", "the job is already %s", job.State)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st, err := s.status(r, job)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// Job list paging.
const (
	defaultJobsLimit = 50
	maxJobsLimit     = 200
)

type jobList struct {
	Jobs       []jobStatus `json:"jobs"`
	NextCursor *string     `json:"next_cursor"`
}

func (s *server) listJobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := limitParam(q, defaultJobsLimit, maxJobsLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var after *store.JobCursor
	if c := q.Get("cursor"); c != "" {
		if after, err = decodeJobCursor(c); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	// One more than asked tells whether there is a next page.
	list, err := s.Store.ListJobs(r.Context(), tenantFrom(r.Context()), after, limit+1)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := jobList{Jobs: []jobStatus{}}
	if len(list) > limit {
		list = list[:limit]
		next := encodeJobCursor(list[limit-1])
		out.NextCursor = &next
	}
	ids := make([]string, len(list))
	for i, j := range list {
		ids[i] = j.ID
	}
	counts, err := s.Store.RowCountsByJob(r.Context(), ids)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	now := s.Now()
	for _, j := range list {
		out.Jobs = append(out.Jobs, statusOf(j, counts[j.ID], now))
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}

// limitParam reads ?limit=: def when absent, at most max (larger values are
// cut to max), a 400 when not a positive whole number.
func limitParam(q url.Values, def, max int) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, badParam("limit", "limit %q is not a whole number from 1 to %d", clip(v), max)
	}
	return min(n, max), nil
}

// A job cursor is the base64url of "created_at|id" of the last job of a
// page; clients treat it as opaque.
func encodeJobCursor(j store.Job) string {
	return base64.RawURLEncoding.EncodeToString([]byte(j.CreatedAt.UTC().Format(time.RFC3339Nano) + "|" + j.ID))
}

func decodeJobCursor(c string) (*store.JobCursor, error) {
	bad := badParam("cursor", "cursor is not a cursor this API returned")
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, bad
	}
	ts, id, ok := strings.Cut(string(b), "|")
	if !ok {
		return nil, bad
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return nil, bad
	}
	if _, err := uuid.Parse(id); err != nil {
		return nil, bad
	}
	return &store.JobCursor{CreatedAt: t, ID: id}, nil
}

// clip shortens a client's value quoted back in a message.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
