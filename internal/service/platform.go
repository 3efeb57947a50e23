package service

// The platform's own API: connect a member's account, list the connected
// members, sync their profiles in member sync jobs. Only connected members:
// a third party's profile is a cold lookup, refused (enrich.ErrColdLookup)
// before any call.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/platform"
	"github.com/enrichq/enrichq/internal/store"
)

// The platform's names, as the doors see them.
type (
	// PlatformMember is a connected member; its Token never leaves a door.
	PlatformMember = store.PlatformMember
	// MemberFilter selects members (status, connection ending before, cursor, limit).
	MemberFilter = store.MemberFilter
	// ConnectCallback is what the consent screen sends back.
	ConnectCallback = platform.Callback
	// SyncRequest is a member sync job to submit; its Tenant is the principal's.
	SyncRequest = platform.SyncRequest
	// ConnectError: the consent flow failed (Upstream: at the platform).
	ConnectError = platform.ConnectError
	// UnknownMembersError lists the references that are no member of the tenant.
	UnknownMembersError = store.UnknownMembersError
)

// Member statuses of MemberFilter.Status.
const (
	MemberActive      = store.MemberActive
	MemberNeedsReauth = store.MemberNeedsReauth
)

var (
	// ErrPlatformNotConfigured: this server has no platform (ENRICHQ_PLATFORM_*).
	ErrPlatformNotConfigured = errors.New("the platform is not configured on this server")
	// ErrConnectState: the callback's state is unknown, used or expired.
	ErrConnectState = platform.ErrConnectState
	// ErrNoMembers: a member sync of no member.
	ErrNoMembers = store.ErrNoMembers
)

// GuardMembers refuses member references that are profile URLs (a cold
// lookup), before anything else is checked.
func GuardMembers(refs []string) error { return platform.GuardMembers(refs) }

// PlatformConfigured says whether the platform's operations can run.
func (s *Service) PlatformConfigured() bool { return s.platform != nil }

func (s *Service) needPlatform(p Principal, scope domain.Scope) error {
	if err := p.Require(scope); err != nil {
		return err
	}
	if s.platform == nil {
		return ErrPlatformNotConfigured
	}
	return nil
}

// ConnectURL is where a member of the tenant consents (scope submit), and
// how long the link works.
func (s *Service) ConnectURL(ctx context.Context, p Principal) (string, time.Duration, error) {
	if err := s.needPlatform(p, domain.ScopeSubmit); err != nil {
		return "", 0, err
	}
	u, err := s.platform.ConnectURL(ctx, p.Tenant)
	return u, s.platform.ConnectTTL(), err
}

// CompleteConnect ends the consent flow: the member of the callback's state
// is connected. It takes no principal: the state names the tenant.
func (s *Service) CompleteConnect(ctx context.Context, cb ConnectCallback) (PlatformMember, error) {
	if s.platform == nil {
		return PlatformMember{}, ErrPlatformNotConfigured
	}
	return s.platform.CompleteConnect(ctx, cb)
}

// ListMembers lists the tenant's members by f (scope read).
func (s *Service) ListMembers(ctx context.Context, p Principal, f MemberFilter) ([]PlatformMember, error) {
	if err := s.needPlatform(p, domain.ScopeRead); err != nil {
		return nil, err
	}
	return s.store.ListPlatformMembers(ctx, p.Tenant, f)
}

// GetMember is one member of the tenant (scope read).
func (s *Service) GetMember(ctx context.Context, p Principal, id string) (PlatformMember, error) {
	if err := s.needPlatform(p, domain.ScopeRead); err != nil {
		return PlatformMember{}, err
	}
	m, err := s.store.GetPlatformMember(ctx, p.Tenant, id)
	return m, notFound("member", err)
}

// SyncStatus is a member sync job's status and when its next waiting row
// is due (a row parked by the daily quota waits until just after midnight UTC).
type SyncStatus struct {
	JobStatus
	NextAttemptAt *time.Time `json:"next_attempt_at"`
}

// SubmitSync stores a member sync job of the tenant (scope submit); created
// is false when its idempotency key was used before.
func (s *Service) SubmitSync(ctx context.Context, p Principal, req SyncRequest) (st SyncStatus, created bool, err error) {
	if err := s.needPlatform(p, domain.ScopeSubmit); err != nil {
		return SyncStatus{}, false, err
	}
	req.Tenant = p.Tenant
	job, created, err := s.platform.SubmitSync(ctx, req)
	if err != nil {
		return SyncStatus{}, false, err
	}
	st, err = s.syncStatus(ctx, job)
	return st, created, err
}

// MemberSync is the status of a member sync job of the tenant (scope read).
func (s *Service) MemberSync(ctx context.Context, p Principal, id string) (SyncStatus, error) {
	if err := p.Require(domain.ScopeRead); err != nil {
		return SyncStatus{}, err
	}
	job, err := s.syncJob(ctx, p, id)
	if err != nil {
		return SyncStatus{}, err
	}
	return s.syncStatus(ctx, job)
}

// ResumeMemberSync resumes a member sync job paused by the platform (a
// retired or missing version), once the workers run with a newer version
// (scope submit). A *ConflictError unless the job is paused.
func (s *Service) ResumeMemberSync(ctx context.Context, p Principal, id string) (SyncStatus, error) {
	if err := p.Require(domain.ScopeSubmit); err != nil {
		return SyncStatus{}, err
	}
	job, err := s.syncJob(ctx, p, id)
	if err != nil {
		return SyncStatus{}, err
	}
	if job.State != domain.JobPaused {
		return SyncStatus{}, &ConflictError{Code: "conflict", Message: fmt.Sprintf("the job is %s, not paused", job.State)}
	}
	if s.platform != nil { // hands its chunks to the queue at once
		err = s.platform.ResumeSync(ctx, job.ID)
	} else { // the scheduler's next dispatch hands them
		err = s.store.ResumeJob(ctx, job.ID)
	}
	if err != nil {
		return SyncStatus{}, err
	}
	if job, err = s.store.GetJob(ctx, job.Tenant, job.ID); err != nil {
		return SyncStatus{}, err
	}
	return s.syncStatus(ctx, job)
}

// syncJob is a member sync job of the tenant; another job, or none, is a
// "member sync job" not found.
func (s *Service) syncJob(ctx context.Context, p Principal, id string) (store.Job, error) {
	ok, err := s.store.IsPlatformSync(ctx, p.Tenant, id)
	if err != nil {
		return store.Job{}, err
	}
	if !ok {
		return store.Job{}, &NotFoundError{Noun: "member sync job"}
	}
	job, err := s.store.GetJob(ctx, p.Tenant, id)
	return job, notFound("member sync job", err)
}

func (s *Service) syncStatus(ctx context.Context, job store.Job) (SyncStatus, error) {
	counts, err := s.store.RowCounts(ctx, job.ID)
	if err != nil {
		return SyncStatus{}, err
	}
	next, err := s.store.NextAttempt(ctx, job.ID)
	if err != nil {
		return SyncStatus{}, err
	}
	return SyncStatus{JobStatus: StatusOf(job, counts, s.now()), NextAttemptAt: utc(next)}, nil
}
