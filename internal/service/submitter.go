package service

import (
	"context"
	"log/slog"

	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/webhook"
)

// Submitter stores new jobs and hands their chunks to the queue; it prices
// them too (Estimate). It checks no scope: Service.Submit and
// Service.Estimate do, then call it.
type Submitter struct {
	Store    *store.Store
	Enqueuer *jobs.Enqueuer // nil: leave every chunk to the scheduler's chunk dispatcher
	Log      *slog.Logger
	// ChunkSize is the number of rows a task carries; default jobs.DefaultChunkSize.
	ChunkSize int
	// Window is how many chunks of one job are in the queue at once
	// (default store.DefaultWindow): the submit request
	// hands the first window of chunks, workers hand the next one as they
	// finish one, and the scheduler's chunk dispatcher anything lost.
	Window int

	// For estimates (dry runs): the vendor's rate, whether bulk calls are
	// used, the cost table (default enrich.DefaultCosts()), and the vendor
	// key's id, whose learned prices (the workers' price book) win over the
	// table where the vendor has shown them.
	VendorRPS float64
	Bulk      bool
	Costs     enrich.CostTable
	Account   string

	// Webhooks: whether callbacks are sent (config.Webhooks.Enabled), and
	// whether callback URLs may point at loopback or private networks.
	WebhooksEnabled       bool
	AllowPrivateCallbacks bool

	// ErasureKey keys the hashes of the suppression list
	// (ENRICHQ_ERASURE_KEY): a lookup of an erased person is stored skipped.
	// Empty: no erasure can have been made, nothing is checked.
	ErasureKey []byte
}

// Submission is one job to submit.
type Submission struct {
	Tenant         string
	IdempotencyKey string
	// RequestOptions identifies the request beside its rows (the options as
	// the caller gave them, before any default): the idempotency key sent
	// again with other options or rows is refused (store.ErrIdempotencyKeyReused).
	RequestOptions []byte
	Format         string // json or csv
	Options        ingest.JobOptions
	// Feed parses the upload, calling emit for every lookup; an error
	// (an *ingest.Error for bad input) rejects the whole job.
	Feed func(emit func(ingest.Lookup) error) error
	// Upload, when set, says what the upload held once Feed has run; it is
	// stored with the job (Counted.Upload).
	Upload func() UploadHeld
	// UploadID names a stored upload in place of Feed: the service reads
	// it into Feed, Upload and Format.
	UploadID string
}

// UploadHeld is what an upload held: its columns, rows and distinct lookups.
type UploadHeld = store.Upload

// Submit stores the job and its rows in one transaction, then enqueues its
// first chunks. If the enqueue fails the job is still safe: the scheduler
// finds its chunks in Postgres. created is false when the idempotency key
// was used before and job is the first one.
func (s *Submitter) Submit(ctx context.Context, sub Submission) (job store.Job, created bool, err error) {
	if err := s.checkCallback(ctx, sub.Options.CallbackURL); err != nil {
		return store.Job{}, false, err
	}
	suppressed, err := jobs.Suppressor(ctx, s.Store, s.ErasureKey, sub.Tenant)
	if err != nil {
		return store.Job{}, false, err
	}
	job, created, err = s.Store.CreateJob(ctx, s.newJob(sub), func(add func(store.NewRow) error) error {
		return sub.Feed(func(l ingest.Lookup) error {
			r := store.NewRow{InputRow: l.Row, Ref: l.Ref, Kind: l.Kind, ProfileURL: l.ProfileURL, Name: l.Name,
				Company: l.Company, Domain: l.Domain, Email: l.Email, Role: l.Role, Extra: l.Extra}
			if suppressed != nil {
				r.SkipReason = suppressed(l)
			}
			return add(r)
		})
	})
	if err != nil || !created {
		return job, created, err
	}
	s.logger().Info("job submitted", "job_id", job.ID, "tenant", job.Tenant, "rows", job.TotalRows, "chunks", job.ChunkCount,
		"lookups", job.Lookups, "format", job.SourceFormat)
	s.enqueueFirstChunks(ctx, job)
	return job, true, nil
}

// checkCallback refuses a callback URL this server would not call: none
// when webhooks are off, a private address unless allowed.
func (s *Submitter) checkCallback(ctx context.Context, url string) error {
	if url == "" {
		return nil
	}
	msg := ""
	if !s.WebhooksEnabled {
		msg = "this server sends no callbacks (ENRICHQ_WEBHOOKS is off); poll GET /v1/jobs/{id} instead"
	} else if err := webhook.CheckCallbackURL(ctx, url, s.AllowPrivateCallbacks); err != nil {
		msg = err.Error()
	}
	if msg == "" {
		return nil
	}
	return &ingest.Error{Code: ingest.CodeInvalidOptions, Message: "invalid job options",
		Details: []ingest.FieldError{{Column: "callback_url", Message: msg}}}
}

// newJob is the stored job of sub.
func (s *Submitter) newJob(sub Submission) store.NewJob {
	chunk := s.ChunkSize
	if chunk <= 0 {
		chunk = jobs.DefaultChunkSize
	}
	return store.NewJob{
		Tenant:         sub.Tenant,
		Name:           sub.Options.Name,
		Lookups:        sub.Options.Lookups,
		Roles:          sub.Options.Roles,
		BudgetCredits:  sub.Options.BudgetCredits,
		MaxAge:         sub.Options.MaxAge,
		SourceFormat:   sub.Format,
		IdempotencyKey: sub.IdempotencyKey,
		RequestOptions: sub.RequestOptions,
		ChunkSize:      chunk,
		CallbackURL:    sub.Options.CallbackURL,
		Vendors:        sub.Options.Vendors,
		Upload:         sub.Upload,
	}
}

func (s *Submitter) logger() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

func (s *Submitter) enqueueFirstChunks(ctx context.Context, job store.Job) {
	if s.Enqueuer == nil {
		return
	}
	if _, err := s.Enqueuer.Dispatch(ctx, s.Store, job.ID, s.Window, jobs.DefaultRecheck, max(s.Window, store.DefaultWindow)); err != nil {
		s.logger().Warn("enqueue failed; the scheduler will enqueue the job", "job_id", job.ID, "err", err)
	}
}
