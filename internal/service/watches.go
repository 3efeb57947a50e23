package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/watches"
	"github.com/enrichq/enrichq/internal/webhook"
)

// Watch paging.
const (
	DefaultWatchesLimit = 50
	MaxWatchesLimit     = 200
	DefaultChangesLimit = 100
	MaxChangesLimit     = 1000
)

// NewWatch is what CreateWatch asks: the finished job whose inputs are
// watched, how often ("30d", at least 7 days), the monthly cap in budget
// credits, the lookups (default the job's) and where person.changed
// webhooks go ("" for none).
type NewWatch struct {
	JobID             string         `json:"job_id"`
	Every             string         `json:"every"`
	MonthlyCapCredits *int64         `json:"monthly_cap_credits"`
	Lookups           []domain.Stage `json:"lookups"`
	CallbackURL       string         `json:"callback_url"`
}

// WatchPatch is what UpdateWatch changes; nil fields are kept. State is
// "active" (resume) or "paused".
type WatchPatch struct {
	State             *string `json:"state"`
	Every             *string `json:"every"`
	MonthlyCapCredits *int64  `json:"monthly_cap_credits"`
}

// Watch is a watch as the tenant sees it.
type Watch struct {
	ID                string         `json:"id"`
	SourceJobID       string         `json:"job_id"`
	Lookups           []domain.Stage `json:"lookups"`
	Every             string         `json:"every"`
	MonthlyCapCredits int64          `json:"monthly_cap_credits"`
	State             string         `json:"state"`
	Inputs            int            `json:"inputs"`
	NextRunAt         time.Time      `json:"next_run_at"`
	CallbackURL       string         `json:"callback_url,omitempty"`
	Month             WatchMonth     `json:"month"`
	// Note says why the watch waits, when it does: "cap reached, next run
	// at 2026-04-01T…".
	Note      string    `json:"note,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// WatchMonth is a watch's credits in the current month (UTC).
type WatchMonth struct {
	Start      string `json:"start"`
	Spent      int64  `json:"spent"`
	Reserved   int64  `json:"reserved"`
	Remaining  int64  `json:"remaining"` // the cap less spent and reserved
	CapReached bool   `json:"cap_reached"`
}

// WatchEstimate is what a watch would cost in a month, before it is made:
// every input bought on every run (a run buys only the answers older than
// the period; each is, by the time the next run comes).
type WatchEstimate struct {
	Rows          int     `json:"rows"`
	RunsPerMonth  float64 `json:"runs_per_month"`
	CreditsPerRun struct {
		Min int64 `json:"min"`
		Max int64 `json:"max"`
	} `json:"credits_per_run"`
	Month struct {
		Min int64 `json:"min"`
		Max int64 `json:"max"` // never above the cap
	} `json:"month"`
	CappedBy bool `json:"capped_by_cap"` // the cap is below the month's worst case
}

// WatchCreated is CreateWatch's answer.
type WatchCreated struct {
	Watch    Watch         `json:"watch"`
	Estimate WatchEstimate `json:"estimate"`
}

// WatchRun is RunWatch's answer: the run's job, or none when the month's
// cap is reached.
type WatchRun struct {
	JobID  *string `json:"job_id"`
	Rows   int     `json:"rows"`
	Budget int64   `json:"budget_credits"`
	Watch  Watch   `json:"watch"`
}

// WatchChange is a change line.
type WatchChange struct {
	ID     int64     `json:"id"`
	Ref    string    `json:"ref"`
	Field  string    `json:"field"`
	Old    *string   `json:"old"`
	New    *string   `json:"new"`
	Kind   string    `json:"kind"`
	Vendor string    `json:"vendor"`
	JobID  string    `json:"job_id"`
	At     time.Time `json:"at"`
}

// WatchChanges is a page of change lines and the cursor of the next.
type WatchChanges struct {
	Changes    []WatchChange `json:"changes"`
	NextCursor *string       `json:"next_cursor"`
}

// WatchList is a page of watches, newest first.
type WatchList struct {
	Watches    []Watch `json:"watches"`
	NextCursor *string `json:"next_cursor"`
}

// ParseWatchEvery reads a period: whole days ("30d") or a Go duration;
// at least watches.MinEvery.
func ParseWatchEvery(v string) (time.Duration, error) {
	d, ok := parseDays(v)
	if !ok {
		return 0, invalidParam("every", "every %q is not a period like 30d or 720h", clip(v))
	}
	if d < watches.MinEvery {
		return 0, invalidParam("every", "every %q is shorter than the minimum of 7d", clip(v))
	}
	return d, nil
}

// parseDays reads whole days ("30d") or a Go duration ("720h", "0s"), >= 0.
func parseDays(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	d, err := time.ParseDuration(v)
	if err != nil {
		days, ok := strings.CutSuffix(v, "d")
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n > 100*365 {
			return 0, false
		}
		d = time.Duration(n) * 24 * time.Hour
	}
	return d, d >= 0
}

// formatDays writes a duration as whole days when it is some.
func formatDays(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// CreateWatch makes a watch of the distinct inputs of the tenant's
// finished job (scope submit) and answers it with a month's estimate. Past
// the tenant's watch limit it is a *ConflictError watch_limit_reached; past
// its creations per hour a *TooManyRequestsError.
func (s *Service) CreateWatch(ctx context.Context, p Principal, nw NewWatch) (WatchCreated, error) {
	if err := p.Require(domain.ScopeSubmit); err != nil {
		return WatchCreated{}, err
	}
	every, err := s.checkNewWatch(nw)
	if err != nil {
		return WatchCreated{}, err
	}
	if nw.CallbackURL != "" {
		msg := ""
		if !s.submit.WebhooksEnabled {
			msg = "this server sends no webhooks (ENRICHQ_WEBHOOKS is off)"
		} else if err := webhook.CheckCallbackURL(ctx, nw.CallbackURL, s.submit.AllowPrivateCallbacks); err != nil {
			msg = err.Error()
		}
		if msg != "" {
			return WatchCreated{}, invalidParam("callback_url", "%s", msg)
		}
	}
	w, err := s.store.CreateWatch(ctx, store.NewWatch{Tenant: p.Tenant, SourceJob: nw.JobID, Lookups: nw.Lookups, Every: every,
		MonthlyCapCredits: *nw.MonthlyCapCredits, CallbackURL: nw.CallbackURL, Now: s.now(), KeyID: p.KeyID,
		Admit: s.watchLimits.AdmitCreate})
	if errors.Is(err, store.ErrJobNotFinished) {
		return WatchCreated{}, &ConflictError{Code: "job_not_finished", Message: "a watch is made from a finished job: wait for it to finish"}
	}
	if err != nil {
		return WatchCreated{}, watchRefusal(err)
	}
	classes, err := s.store.WatchInputClasses(ctx, w.Tenant, w.ID)
	if err != nil {
		return WatchCreated{}, err
	}
	est, err := s.watchEstimate(ctx, classes, w.Lookups, w.Every, w.MonthlyCapCredits)
	if err != nil {
		return WatchCreated{}, err
	}
	view, err := s.watchView(ctx, w)
	return WatchCreated{Watch: view, Estimate: est}, err
}

// watchEstimate prices a run of every input by today's estimate (the
// vendor's learned prices, else the cost table) and a month of runs, of
// inputs counted by class (inside Postgres for a watch: a watch of a million
// inputs reads a few rows).
func (s *Service) watchEstimate(ctx context.Context, classes []store.WatchInputClass, lookups []domain.Stage,
	every time.Duration, monthlyCap int64) (WatchEstimate, error) {
	// A watch's runs ask every configured vendor (a run has no vendors option).
	vendors, err := s.estimateVendors(nil)
	if err != nil {
		return WatchEstimate{}, err
	}
	e, err := s.submit.estimateClasses(ctx, lookups, classes, vendors)
	if err != nil {
		return WatchEstimate{}, err
	}
	var out WatchEstimate
	out.Rows = e.Rows
	out.RunsPerMonth = watches.RunsPerMonth(every)
	out.CreditsPerRun.Min, out.CreditsPerRun.Max = e.Credits.Min, e.Credits.Max
	out.Month.Min = min(watches.PerMonth(e.Credits.Min, every), monthlyCap)
	out.Month.Max = min(watches.PerMonth(e.Credits.Max, every), monthlyCap)
	out.CappedBy = watches.PerMonth(e.Credits.Max, every) > monthlyCap
	return out, nil
}

// watchView is a watch with this month's credits.
func (s *Service) watchView(ctx context.Context, w store.Watch) (Watch, error) {
	now := s.now()
	month := watches.MonthOf(now)
	spent, reserved, err := s.store.WatchSpend(ctx, w.ID, now)
	if err != nil {
		return Watch{}, err
	}
	v := Watch{ID: w.ID, SourceJobID: w.SourceJob, Lookups: w.Lookups, Every: formatDays(w.Every), MonthlyCapCredits: w.MonthlyCapCredits,
		State: w.State, Inputs: w.Inputs, NextRunAt: w.NextRunAt, CallbackURL: w.CallbackURL, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt,
		Month: WatchMonth{Start: month.Format(time.DateOnly), Spent: spent, Reserved: reserved,
			Remaining: max(0, w.MonthlyCapCredits-spent-reserved)}}
	if w.CapReachedMonth != nil && w.CapReachedMonth.Equal(month) {
		v.Month.CapReached = true
		v.Note = fmt.Sprintf("cap reached, next run at %s", w.NextRunAt.UTC().Format(time.RFC3339))
	}
	return v, nil
}

// GetWatch is a watch of the tenant with this month's credits (scope read).
func (s *Service) GetWatch(ctx context.Context, p Principal, id string) (Watch, error) {
	if err := p.Require(domain.ScopeRead); err != nil {
		return Watch{}, err
	}
	w, err := s.store.GetWatch(ctx, p.Tenant, id)
	if err != nil {
		return Watch{}, err
	}
	return s.watchView(ctx, w)
}

// ListWatches is a page of the tenant's watches, newest first (scope read).
func (s *Service) ListWatches(ctx context.Context, p Principal, cursor string, limit int) (WatchList, error) {
	if err := p.Require(domain.ScopeRead); err != nil {
		return WatchList{}, err
	}
	if limit <= 0 {
		limit = DefaultWatchesLimit
	}
	limit = min(limit, MaxWatchesLimit)
	var after *store.WatchCursor
	if cursor != "" {
		c, err := decodeJobCursor(cursor)
		if err != nil {
			return WatchList{}, err
		}
		after = &store.WatchCursor{CreatedAt: c.CreatedAt, ID: c.ID}
	}
	ws, err := s.store.ListWatches(ctx, p.Tenant, after, limit+1)
	if err != nil {
		return WatchList{}, err
	}
	out := WatchList{Watches: []Watch{}}
	for i, w := range ws {
		if i == limit {
			c := encodeJobCursor(store.Job{CreatedAt: ws[i-1].CreatedAt, ID: ws[i-1].ID})
			out.NextCursor = &c
			break
		}
		v, err := s.watchView(ctx, w)
		if err != nil {
			return WatchList{}, err
		}
		out.Watches = append(out.Watches, v)
	}
	return out, nil
}

// UpdateWatch pauses, resumes or changes the period or cap of a watch of
// the tenant (scope submit).
func (s *Service) UpdateWatch(ctx context.Context, p Principal, id string, patch WatchPatch) (Watch, error) {
	if err := p.Require(domain.ScopeSubmit); err != nil {
		return Watch{}, err
	}
	sp := store.WatchPatch{State: patch.State, MonthlyCapCredits: patch.MonthlyCapCredits, Now: s.now()}
	if patch.State == nil && patch.Every == nil && patch.MonthlyCapCredits == nil {
		return Watch{}, &InvalidError{Code: CodeInvalidOptions, Message: "nothing to change: send state, every or monthly_cap_credits"}
	}
	if patch.State != nil && *patch.State != watches.Active && *patch.State != watches.Paused {
		return Watch{}, invalidParam("state", "state %q is not active or paused", clip(*patch.State))
	}
	if patch.Every != nil {
		d, err := ParseWatchEvery(*patch.Every)
		if err != nil {
			return Watch{}, err
		}
		sp.Every = &d
	}
	if patch.MonthlyCapCredits != nil && *patch.MonthlyCapCredits < 0 {
		return Watch{}, invalidParam("monthly_cap_credits", "monthly_cap_credits must be a whole number >= 0")
	}
	w, err := s.store.UpdateWatch(ctx, p.Tenant, id, sp)
	if err != nil {
		return Watch{}, err
	}
	if err := s.audit(ctx, p, store.AuditWatchChanged, w.ID, 1); err != nil {
		return Watch{}, err
	}
	return s.watchView(ctx, w)
}

// DeleteWatch removes a watch of the tenant with its inputs, snapshots and
// change lines (scope submit); its runs' jobs stay.
func (s *Service) DeleteWatch(ctx context.Context, p Principal, id string) error {
	if err := p.Require(domain.ScopeSubmit); err != nil {
		return err
	}
	if err := s.store.DeleteWatch(ctx, p.Tenant, id); err != nil {
		return err
	}
	return s.audit(ctx, p, store.AuditWatchDeleted, id, 1)
}

// RunWatch starts a run of a watch of the tenant now (scope submit),
// buying again the answers older than maxAge ("" the watch's period; "0s"
// every row), within what is left of the month's cap. With nothing left
// it is a *ConflictError cap_reached; while a run of the watch is going, or
// sooner than the limits' RunInterval after the last run asked for now, a
// *TooManyRequestsError.
func (s *Service) RunWatch(ctx context.Context, p Principal, id, maxAge string) (WatchRun, error) {
	if err := p.Require(domain.ScopeSubmit); err != nil {
		return WatchRun{}, err
	}
	w, err := s.store.GetWatch(ctx, p.Tenant, id)
	if err != nil {
		return WatchRun{}, err
	}
	age := w.Every
	if maxAge != "" {
		d, ok := parseDays(maxAge)
		if !ok {
			return WatchRun{}, invalidParam("max_age", "max_age %q is not a duration like 720h, 30d or 0s", clip(maxAge))
		}
		age = d
	}
	chunk := s.submit.ChunkSize
	if chunk <= 0 {
		chunk = jobs.DefaultChunkSize
	}
	out, err := s.store.RunWatchNow(ctx, store.RunNow{Tenant: p.Tenant, ID: id, MaxAge: age, Now: s.now(), ChunkSize: chunk,
		Admit: s.watchLimits.AdmitRun})
	if err != nil {
		return WatchRun{}, watchRefusal(err)
	}
	view, err := s.watchView(ctx, out.Watch)
	if err != nil {
		return WatchRun{}, err
	}
	if out.Run == nil {
		return WatchRun{Watch: view}, &ConflictError{Code: "cap_reached",
			Message: fmt.Sprintf("the watch's monthly cap of %d credits is reached; the next run is in the next month", w.MonthlyCapCredits)}
	}
	if err := s.audit(ctx, p, store.AuditWatchRun, out.Run.JobID, out.Run.Rows); err != nil {
		return WatchRun{}, err
	}
	if enq := s.submit.Enqueuer; enq != nil {
		// The chunk dispatcher would hand them over too, a step later.
		_, _ = enq.Dispatch(ctx, s.store, out.Run.JobID, s.submit.Window, jobs.DefaultRecheck, max(s.submit.Window, store.DefaultWindow))
	}
	return WatchRun{JobID: &out.Run.JobID, Rows: out.Run.Rows, Budget: out.Run.Budget, Watch: view}, nil
}

// WatchChanges is a page of a watch's change lines, oldest first, after
// cursor (scope read; a read of personal data, in the audit log).
func (s *Service) WatchChanges(ctx context.Context, p Principal, id, cursor string, limit int) (WatchChanges, error) {
	if err := p.Require(domain.ScopeRead); err != nil {
		return WatchChanges{}, err
	}
	if limit <= 0 {
		limit = DefaultChangesLimit
	}
	limit = min(limit, MaxChangesLimit)
	var after int64
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n < 0 {
			return WatchChanges{}, invalidParam("cursor", "cursor %q is not one this API gave", clip(cursor))
		}
		after = n
	}
	lines, err := s.store.ListWatchChanges(ctx, p.Tenant, id, after, limit)
	if err != nil {
		return WatchChanges{}, err
	}
	out := WatchChanges{Changes: make([]WatchChange, 0, len(lines))}
	for _, l := range lines {
		out.Changes = append(out.Changes, WatchChange(l))
	}
	if len(lines) == limit {
		c := strconv.FormatInt(lines[len(lines)-1].ID, 10)
		out.NextCursor = &c
	}
	if err := s.audit(ctx, p, store.AuditWatchChanges, id, len(lines)); err != nil {
		return WatchChanges{}, err
	}
	return out, nil
}
