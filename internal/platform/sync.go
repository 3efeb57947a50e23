package platform

// Member sync jobs: submitted here, run chunk by chunk by the platform:sync
// handler, each row read with its member's own token.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/ratelimit"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/platform/platformapi"
	"github.com/enrichq/enrichq/internal/store"
)

// SyncRequest asks for a member sync job.
type SyncRequest struct {
	Tenant string
	Name   string
	// Members are member ids (enrichq's or the platform's) of the tenant;
	// ignored with All.
	Members        []string
	All            bool
	IdempotencyKey string
}

// SubmitSync stores a member sync job and enqueues its first chunks. A
// member that looks like a profile URL is a cold lookup: refused with an
// error matching platformapi.ErrColdLookup before anything is stored or called.
// Unknown members are a *store.UnknownMembersError, none at all
// store.ErrNoMembers.
func (p *Platform) SubmitSync(ctx context.Context, req SyncRequest) (store.Job, bool, error) {
	if !req.All {
		if err := GuardMembers(req.Members); err != nil {
			return store.Job{}, false, err
		}
		if len(req.Members) == 0 {
			return store.Job{}, false, store.ErrNoMembers
		}
	}
	job, created, err := p.store.CreatePlatformSync(ctx, store.NewPlatformSync{Tenant: req.Tenant, Name: req.Name,
		Members: req.Members, All: req.All, IdempotencyKey: req.IdempotencyKey, ChunkSize: p.cfg.ChunkSize})
	if err != nil || !created {
		return job, created, err
	}
	p.log.Info("member sync submitted", "job_id", job.ID, "tenant", job.Tenant, "members", job.TotalRows, "chunks", job.ChunkCount)
	if p.enq != nil {
		chunks := make([]int, min(job.ChunkCount, maxFirstChunks))
		for c := range chunks {
			chunks[c] = c
		}
		p.enqueueChunks(ctx, job.ID, chunks)
	}
	return job, true, nil
}

// GuardMembers refuses, before any call, member references that are profile
// URLs: the platform has no lookup of a third party's profile.
func GuardMembers(refs []string) error {
	for _, r := range refs {
		if platformapi.LooksLikeProfileURL(r) {
			return platformapi.ColdLookupError(r)
		}
	}
	return nil
}

// ResumeSync resumes a paused member sync job and hands its open chunks to
// the queue at once, without waiting for the scheduler's next dispatch
// (which takes them when this enqueue fails, or without a queue: enq nil).
func (p *Platform) ResumeSync(ctx context.Context, jobID string) error {
	if err := p.store.ResumeJob(ctx, jobID); err != nil {
		return err
	}
	if p.enq == nil {
		return nil
	}
	chunks, err := p.store.OpenPlatformChunks(ctx, jobID)
	if err != nil {
		return err
	}
	p.enqueueChunks(ctx, jobID, chunks)
	return nil
}

// enqueueChunks hands the first chunks of a job to the queue and stamps
// them; a failure is left to the scheduler's dispatch.
func (p *Platform) enqueueChunks(ctx context.Context, jobID string, chunks []int) {
	var done []int
	for _, c := range chunks[:min(len(chunks), maxFirstChunks)] {
		if err := p.enqueue(ctx, store.ChunkRef{JobID: jobID, Chunk: c}); err != nil {
			p.log.Warn("enqueue failed; the scheduler will enqueue the job", "job_id", jobID, "chunk", c, "err", err)
			break
		}
		done = append(done, c)
	}
	if len(done) > 0 {
		if err := p.store.MarkPlatformChunksEnqueued(context.WithoutCancel(ctx), jobID, done); err != nil {
			p.log.Warn("mark enqueued failed", "job_id", jobID, "err", err)
		}
	}
}

// maxFirstChunks caps the chunks a request hands to the queue itself; the
// scheduler's dispatch hands the rest.
const maxFirstChunks = 200

// HandleSync is the asynq handler of TypeSync.
func (p *Platform) HandleSync(ctx context.Context, t *asynq.Task) error {
	var pl SyncPayload
	if err := json.Unmarshal(t.Payload(), &pl); err != nil || pl.JobID == "" || pl.Chunk < 0 {
		return fmt.Errorf("bad %s payload %q: %w", TypeSync, t.Payload(), errors.Join(err, asynq.SkipRetry))
	}
	retryIn, err := p.ProcessSync(ctx, store.ChunkRef{JobID: pl.JobID, Chunk: pl.Chunk})
	if err != nil {
		return err
	}
	if retryIn > 0 {
		return &jobs.RetryLater{In: retryIn}
	}
	return nil
}

// shortWait: a transient retry due sooner than this brings its task back
// through asynq; later ones, and rows parked until midnight UTC, are the
// scheduler's (it hands a chunk out again once a row of it is due).
const shortWait = 10 * time.Minute

// syncResult is what happened to one row.
type syncResult struct {
	out     store.SyncOutcome
	release bool               // not done: back to pending
	stop    *platformapi.Error // the whole job must stop (400, 426)
	keyErr  bool               // tokens do not open: the job must stop
}

// ProcessSync syncs one chunk of a member sync job. It returns a positive
// duration when rows of the chunk wait for a short retry.
func (p *Platform) ProcessSync(ctx context.Context, ref store.ChunkRef) (time.Duration, error) {
	job, claim, err := p.claimSync(ctx, ref)
	if err != nil || len(claim.Rows) == 0 {
		return 0, err
	}
	stopBeat := p.heartbeat(ctx, claim)
	defer stopBeat()
	results, halt := p.syncRows(ctx, claim.Rows)
	t := tallySync(results, p.cfg.Now())
	sctx := context.WithoutCancel(ctx)
	// A halt pauses the job before its rows go back: released to a job
	// still running, they could be claimed by another worker (whose claim
	// read the job before the pause) and sent to the platform again.
	reason := halt.reason()
	if reason != "" {
		if err := p.pauseSync(sctx, job.ID, reason); err != nil {
			return 0, err
		}
	}
	if err := p.saveSync(sctx, claim.Token, t); err != nil {
		return 0, err
	}
	if t.parked > 0 {
		p.log.Warn("platform daily quota reached: rows parked until after midnight UTC", "job_id", job.ID, "chunk", ref.Chunk,
			"rows", t.parked, "until", t.parkedUntil.UTC())
	}
	if reason != "" {
		return 0, nil
	}
	if _, err := p.store.FinishJobs(sctx, job.ID); err != nil {
		return 0, err
	}
	return t.retryIn, nil
}

// claimSync claims the due rows of a chunk and starts its job. A chunk of
// an unknown or no longer runnable job, or without due rows, yields no rows
// (rows due later are the scheduler's to hand out again).
func (p *Platform) claimSync(ctx context.Context, ref store.ChunkRef) (store.Job, store.PlatformClaim, error) {
	job, err := p.store.JobByID(ctx, ref.JobID)
	if errors.Is(err, store.ErrNotFound) {
		p.log.Warn("member sync chunk of an unknown job dropped", "job_id", ref.JobID, "chunk", ref.Chunk)
		return job, store.PlatformClaim{}, nil
	}
	if err != nil || !job.State.Runnable() {
		return job, store.PlatformClaim{}, err
	}
	claim, err := p.store.ClaimPlatformChunk(ctx, ref.JobID, ref.Chunk, p.cfg.Lease, p.cfg.Now())
	if err != nil || len(claim.Rows) == 0 {
		return job, claim, err
	}
	return job, claim, p.store.StartJob(ctx, job.ID)
}

// syncHalt is why the rest of a chunk is not synced: the platform refuses
// every call of the application (400, 426), or member tokens do not open.
type syncHalt struct {
	mu      sync.Mutex
	stopped *platformapi.Error
	keyErr  bool
}

func (h *syncHalt) halted() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stopped != nil || h.keyErr
}

// note keeps the first stop a row's result brings.
func (h *syncHalt) note(r syncResult) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.stop != nil && h.stopped == nil {
		h.stopped = r.stop
	}
	h.keyErr = h.keyErr || r.keyErr
}

// reason is the job's pause reason; "" when nothing halted.
func (h *syncHalt) reason() string {
	switch {
	case h.stopped != nil:
		return h.stopped.Message
	case h.keyErr:
		return errTokenKey.Error()
	}
	return ""
}

// syncRows syncs the claimed rows, Concurrency at a time. Once a row halts
// the job, the rows not yet started are released untouched.
func (p *Platform) syncRows(ctx context.Context, rows []store.SyncRow) ([]syncResult, *syncHalt) {
	results := make([]syncResult, len(rows))
	halt := &syncHalt{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, p.cfg.Concurrency)
	for i, row := range rows {
		if halt.halted() || ctx.Err() != nil {
			results[i] = syncResult{out: store.SyncOutcome{RowID: row.ID}, release: true}
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if halt.halted() {
				results[i] = syncResult{out: store.SyncOutcome{RowID: row.ID}, release: true}
				return
			}
			r := p.syncRow(ctx, row)
			halt.note(r)
			results[i] = r
		}()
	}
	wg.Wait()
	return results, halt
}

// syncTally is a chunk's results sorted: the outcomes to save, the rows to
// release, the rows parked until the quotas reset, and the soonest
// transient retry if within shortWait.
type syncTally struct {
	outs        []store.SyncOutcome
	release     []int64
	parked      int
	parkedUntil time.Time
	retryIn     time.Duration
}

func tallySync(results []syncResult, now time.Time) syncTally {
	var t syncTally
	for _, r := range results {
		if r.release || r.stop != nil || r.keyErr {
			t.release = append(t.release, r.out.RowID)
			continue
		}
		t.outs = append(t.outs, r.out)
		switch {
		case r.out.State != domain.RowRetryWait:
		case !r.out.FailedAttempt: // parked until the quotas reset: the scheduler's
			t.parked++
			if r.out.NextAttemptAt.After(t.parkedUntil) {
				t.parkedUntil = r.out.NextAttemptAt
			}
		default:
			if d := max(r.out.NextAttemptAt.Sub(now), 10*time.Millisecond); d <= shortWait && (t.retryIn == 0 || d < t.retryIn) {
				t.retryIn = d
			}
		}
	}
	return t
}

// saveSync saves the chunk's outcomes and releases the rows not done.
func (p *Platform) saveSync(ctx context.Context, token string, t syncTally) error {
	if _, err := p.store.SavePlatformOutcomes(ctx, token, t.outs); err != nil {
		return err
	}
	if len(t.release) > 0 {
		return p.store.ReleaseRows(ctx, token, t.release)
	}
	return nil
}

// pauseSync pauses the job for reason; no call of the application can
// succeed until its configuration changes.
func (p *Platform) pauseSync(ctx context.Context, jobID, reason string) error {
	ok, err := p.store.PauseJob(ctx, jobID, domain.PausedByPlatform, reason)
	if err == nil && ok {
		p.log.Error("member sync paused", "job_id", jobID, "reason", reason)
	}
	return err
}

// heartbeat extends the claim's lease until the returned func is called.
func (p *Platform) heartbeat(ctx context.Context, claim store.PlatformClaim) func() {
	return jobs.KeepLease(ctx, p.store, p.log, claim.Token, claim.IDs(), p.cfg.Lease)
}

// Reasons of failed member rows.
const reasonReconnect = "member needs to reconnect (GET /v1/platform/connect): "

// syncRow reads one member's profile with their own token and decides the
// row's outcome.
func (p *Platform) syncRow(ctx context.Context, row store.SyncRow) syncResult {
	res := syncResult{out: store.SyncOutcome{RowID: row.ID}}
	failed := func(reason string) syncResult {
		res.out.State, res.out.Reason, res.out.LastError = domain.RowFailed, reason, reason
		return res
	}
	m := row.Member
	if m == nil {
		return failed("the member is no longer connected")
	}
	if m.Status != store.MemberActive {
		return failed(reasonReconnect + m.StatusReason)
	}
	tok, err := p.openToken(*m)
	if err != nil {
		res.keyErr = true
		return res
	}
	now := p.cfg.Now()
	refreshed := false
	if m.Token.ExpiresAt != nil && !now.Before(*m.Token.ExpiresAt) {
		// Expired by its own clock: refresh it, or make it loud without a call.
		r, res2, done := p.refreshForRow(ctx, row, *m, res)
		if done {
			return res2
		}
		m, tok, refreshed = &r.member, r.token, true
	}
	prof, err := p.cfg.Client.Me(ctx, tok.AccessToken)
	if pe, ok := platformapi.AsError(err); ok && pe.Class == platformapi.ClassTokenInvalid && m.Token.Refreshable && !refreshed {
		// The token may have ended sooner than it said: one refresh, one more try.
		r, res2, done := p.refreshForRow(ctx, row, *m, res)
		if done {
			return res2
		}
		m, tok = &r.member, r.token
		prof, err = p.cfg.Client.Me(ctx, tok.AccessToken)
	}
	if err == nil {
		if prof.ID != m.MemberID {
			return failed(fmt.Sprintf("the token answered for another member (%s, not %s)", clipText(prof.ID, 100), m.MemberID))
		}
		res.out.State = domain.RowMatched
		res.out.MemberID = m.ID
		res.out.FetchedAt = p.cfg.Now()
		res.out.Profile = &store.ProfileResult{Name: prof.Name, Headline: prof.Headline, Raw: prof.Raw}
		return res
	}
	pe, ok := platformapi.AsError(err)
	if !ok {
		pe = &platformapi.Error{Class: platformapi.ClassTransient, Message: clipText(err.Error(), 300), Err: err}
	}
	switch {
	case pe.StopsApp():
		res.stop = pe
		return res
	case pe.Class == platformapi.ClassQuota:
		// Both daily quotas reset at midnight UTC: retry just after it,
		// never sooner (a short backoff would burn what is left of the day).
		jitter := time.Second + time.Duration(p.cfg.Rand()*float64(p.cfg.QuotaJitter))
		res.out.State = domain.RowRetryWait
		res.out.NextAttemptAt = platformapi.NextQuotaReset(now).Add(jitter)
		res.out.LastError = pe.Message
		return res
	case pe.Class == platformapi.ClassTokenInvalid:
		reason := pe.Message
		if changed, err := p.store.MarkMemberNeedsReauth(context.WithoutCancel(ctx), m.ID, reason); err != nil {
			return p.transient(res, row, "marking the member needs_reauth: "+err.Error())
		} else if changed {
			p.log.Warn("platform member needs to reconnect", "tenant", m.Tenant, "member", m.ID, "reason", reason)
		}
		return failed(reasonReconnect + reason)
	case pe.Class == platformapi.ClassScope, pe.Class == platformapi.ClassRejected, pe.Class == platformapi.ClassColdLookup:
		return failed(pe.Message)
	default:
		return p.transient(res, row, pe.Error())
	}
}

// refreshForRow refreshes a member's token for a sync row. done is true when
// the row's outcome is decided (failed: needs_reauth; retry: the platform
// failed; stop: tokens do not open).
func (p *Platform) refreshForRow(ctx context.Context, row store.SyncRow, m store.PlatformMember, res syncResult) (refreshOutcome, syncResult, bool) {
	r, err := p.refresh(ctx, m)
	switch {
	case errors.Is(err, errTokenKey):
		res.keyErr = true
		return r, res, true
	case err != nil:
		return r, p.transient(res, row, err.Error()), true
	case r.member.Status != store.MemberActive:
		p.log.Warn("platform member needs to reconnect", "tenant", m.Tenant, "member", m.ID, "reason", r.member.StatusReason)
		res.out.State, res.out.Reason = domain.RowFailed, reasonReconnect+r.member.StatusReason
		res.out.LastError = res.out.Reason
		return r, res, true
	}
	return r, res, false
}

// transient is a failure worth retrying: retry_wait with backoff, or failed
// once the attempts are used up.
func (p *Platform) transient(res syncResult, row store.SyncRow, msg string) syncResult {
	res.out.LastError = msg
	res.out.FailedAttempt = true
	if row.Attempts+1 >= p.cfg.MaxAttempts {
		res.out.State, res.out.Reason = domain.RowFailed, "attempts exhausted: "+msg
		return res
	}
	res.out.State = domain.RowRetryWait
	res.out.NextAttemptAt = p.cfg.Now().Add(max(ratelimit.Backoff(row.Attempts, p.cfg.RetryBase, p.cfg.RetryMax, p.cfg.Rand), 10*time.Millisecond))
	return res
}
