package service

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// JobStatus returns the status of the tenant's job id (scope read). Clients
// poll it: the job and its row counts come in one round trip, from the
// status cache when it is fresh.
func (s *Service) JobStatus(ctx context.Context, p Principal, id string) (_ JobStatus, err error) {
	defer func() { err = notFound("job", err) }()
	if err := p.Require(domain.ScopeRead); err != nil {
		return JobStatus{}, err
	}
	job, counts, err := s.statuses.get(ctx, p.Tenant, id, func(ctx context.Context) (store.Job, map[domain.RowState]int, error) {
		return s.store.GetJobStatus(ctx, p.Tenant, id)
	})
	if err != nil {
		return JobStatus{}, err
	}
	return s.withUnsettled(ctx, StatusOf(job, counts, s.now()))
}

// Cancel cancels the tenant's job id (scope submit): rows not yet claimed
// become skipped. Canceling a canceled job changes nothing; a finished job
// is a *ConflictError job_finished.
func (s *Service) Cancel(ctx context.Context, p Principal, id string) (_ JobStatus, err error) {
	defer func() { err = notFound("job", err) }()
	if err := p.Require(domain.ScopeSubmit); err != nil {
		return JobStatus{}, err
	}
	job, err := s.store.CancelJob(ctx, p.Tenant, id)
	s.statuses.drop(p.Tenant, id)
	if errors.Is(err, store.ErrConflict) && job.ID != "" {
		err = &ConflictError{Code: "job_finished", Message: "the job is already " + string(job.State)}
	}
	if err != nil {
		return JobStatus{}, err
	}
	return s.status(ctx, job)
}

// Job list paging.
const (
	DefaultJobsLimit = 50
	MaxJobsLimit     = 200
)

// JobList is a page of the tenant's jobs, newest first, and the cursor of
// the next page (nil on the last).
type JobList struct {
	Jobs       []JobStatus `json:"jobs"`
	NextCursor *string     `json:"next_cursor"`
}

// ListJobs returns up to limit of the tenant's jobs (scope read), newest
// first, after cursor ("" from the newest; else a NextCursor this service
// gave). A limit of 0 or less is DefaultJobsLimit; above MaxJobsLimit, MaxJobsLimit.
func (s *Service) ListJobs(ctx context.Context, p Principal, cursor string, limit int) (JobList, error) {
	if err := p.Require(domain.ScopeRead); err != nil {
		return JobList{}, err
	}
	if limit <= 0 {
		limit = DefaultJobsLimit
	}
	limit = min(limit, MaxJobsLimit)
	var after *store.JobCursor
	if cursor != "" {
		var err error
		if after, err = decodeJobCursor(cursor); err != nil {
			return JobList{}, err
		}
	}
	// One more than asked tells whether there is a next page.
	list, err := s.store.ListJobs(ctx, p.Tenant, after, limit+1)
	if err != nil {
		return JobList{}, err
	}
	out := JobList{Jobs: []JobStatus{}}
	if len(list) > limit {
		list = list[:limit]
		next := encodeJobCursor(list[limit-1])
		out.NextCursor = &next
	}
	ids := make([]string, len(list))
	for i, j := range list {
		ids[i] = j.ID
	}
	counts, err := s.store.RowCountsByJob(ctx, ids)
	if err != nil {
		return JobList{}, err
	}
	now := s.now()
	for _, j := range list {
		out.Jobs = append(out.Jobs, StatusOf(j, counts[j.ID], now))
	}
	return out, nil
}

// A job cursor is the base64url of "created_at|id" of the last job of a
// page; clients treat it as opaque.
func encodeJobCursor(j store.Job) string {
	return base64.RawURLEncoding.EncodeToString([]byte(j.CreatedAt.UTC().Format(time.RFC3339Nano) + "|" + j.ID))
}

func decodeJobCursor(c string) (*store.JobCursor, error) {
	bad := invalidParam("cursor", "cursor is not a cursor this API returned")
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

// clip shortens a caller's value quoted back in a message.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
