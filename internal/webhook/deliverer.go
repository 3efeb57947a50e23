// Package webhook sends completion callbacks: POSTs to the callback_url of a
// finished job, signed with the job's tenant's own secret (so no tenant can
// sign for another), recorded in Postgres (webhook_deliveries) and retried
// with backoff. Its Deliverer is a worker of its own, run on every scheduler
// instance beside the maintenance leader: a tenant's slow receiver holds up
// one delivery slot, never lease recovery, and one tenant holds at most
// PerTenant slots.
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/enrichq/enrichq/internal/enrich/ratelimit"
	"github.com/enrichq/enrichq/internal/store"
)

// Defaults of a [Config].
const (
	DefaultTimeout     = 10 * time.Second
	DefaultMaxAttempts = 10
	DefaultRetryBase   = 10 * time.Second
	DefaultRetryMax    = time.Hour
	DefaultConcurrency = 8
	DefaultPerTenant   = 2
	DefaultPoll        = time.Second
)

// batch caps the deliveries DeliverDue claims at once.
const batch = 100

// Config configures a [Deliverer]. Zero values take the defaults.
type Config struct {
	// AllowPrivate allows callback URLs on loopback and private networks;
	// off, they are refused at submit and at connect.
	AllowPrivate bool
	// Timeout bounds one attempt. Default DefaultTimeout.
	Timeout time.Duration
	// MaxAttempts before a delivery is failed for good. Default DefaultMaxAttempts.
	MaxAttempts int
	// RetryBase and RetryMax shape the backoff between attempts. Default
	// DefaultRetryBase and DefaultRetryMax.
	RetryBase, RetryMax time.Duration
	// Concurrency is the deliveries in flight at once. Default DefaultConcurrency.
	Concurrency int
	// PerTenant caps the deliveries of one tenant in flight at once, across
	// the schedulers sharing the database (store.ClaimWebhookDeliveries):
	// the other tenants keep the rest of the slots while one tenant's
	// receivers hang. Default DefaultPerTenant.
	PerTenant int
	// Poll is how long Run waits when nothing is due. Default DefaultPoll.
	Poll time.Duration
}

func (c *Config) fill() {
	c.Timeout = positive(c.Timeout, DefaultTimeout)
	c.MaxAttempts = positive(c.MaxAttempts, DefaultMaxAttempts)
	c.RetryBase = positive(c.RetryBase, DefaultRetryBase)
	c.RetryMax = positive(c.RetryMax, DefaultRetryMax)
	c.Concurrency = positive(c.Concurrency, DefaultConcurrency)
	c.PerTenant = positive(c.PerTenant, DefaultPerTenant)
	c.Poll = positive(c.Poll, DefaultPoll)
}

// positive is v, or def when v is zero or negative.
func positive[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Deliverer sends the completion callbacks recorded in Postgres. Several
// may run at once (on every scheduler): each claims disjoint deliveries.
type Deliverer struct {
	store  *store.Store
	cfg    Config
	client *http.Client
	log    *slog.Logger
}

// New builds a Deliverer. Its HTTP client refuses, at connect time,
// addresses on loopback and private networks unless AllowPrivate, and
// follows no redirect: the receiver said where it is.
func New(st *store.Store, cfg Config, log *slog.Logger) *Deliverer {
	cfg.fill()
	if log == nil {
		log = slog.Default()
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout}
	if !cfg.AllowPrivate {
		dialer.Control = publicOnly
	}
	transport := &http.Transport{DialContext: dialer.DialContext, TLSHandshakeTimeout: cfg.Timeout,
		MaxIdleConns: 16, IdleConnTimeout: time.Minute}
	client := &http.Client{
		Timeout:       cfg.Timeout,
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Deliverer{store: st, cfg: cfg, client: client, log: log}
}

// lease is how long a claimed delivery stays claimed: a sender lost
// mid-attempt gives it back after this.
func (d *Deliverer) lease() time.Duration { return d.cfg.Timeout + time.Minute }

// Run delivers until ctx ends: it claims due deliveries as slots free up
// (Concurrency in flight at most, PerTenant of one tenant), so a receiver
// that hangs holds one slot and the others go on; when nothing is due it waits Poll. It returns nil
// once ctx ends and the attempts in flight are recorded.
func (d *Deliverer) Run(ctx context.Context) error {
	slots := make(chan struct{}, d.cfg.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	poll := time.NewTimer(d.cfg.Poll)
	poll.Stop()
	for {
		select { // one free slot, then as many more as are free now
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		free := 1
	more:
		for free < d.cfg.Concurrency {
			select {
			case slots <- struct{}{}:
				free++
			default:
				break more
			}
		}
		due, err := d.store.ClaimWebhookDeliveries(ctx, free, d.cfg.PerTenant, d.lease())
		if err != nil && ctx.Err() == nil {
			d.log.Error("webhook claim failed", "err", err)
		}
		for range free - len(due) {
			<-slots
		}
		for _, del := range due {
			wg.Go(func() {
				defer func() { <-slots }()
				d.deliver(ctx, del)
			})
		}
		if len(due) == free {
			continue // more may be due
		}
		poll.Reset(d.cfg.Poll)
		select {
		case <-ctx.Done():
			return nil
		case <-poll.C:
		}
	}
}

// DeliverDue sends the deliveries due now (up to a batch, PerTenant of a
// tenant), Concurrency at once, records each attempt, and returns how many
// were delivered.
func (d *Deliverer) DeliverDue(ctx context.Context) (int, error) {
	due, err := d.store.ClaimWebhookDeliveries(ctx, batch, d.cfg.PerTenant, d.lease())
	if err != nil || len(due) == 0 {
		return 0, err
	}
	var mu sync.Mutex
	delivered := 0
	slots := make(chan struct{}, d.cfg.Concurrency)
	var wg sync.WaitGroup
	for _, del := range due {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if d.deliver(ctx, del) {
				mu.Lock()
				delivered++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return delivered, nil
}

// deliver makes one attempt and records it; it reports whether the
// receiver took the delivery.
func (d *Deliverer) deliver(ctx context.Context, del store.WebhookDelivery) bool {
	attempt := store.WebhookAttempt{}
	status, err := d.post(ctx, del)
	if status != 0 {
		attempt.Status = &status
	}
	if err == nil {
		attempt.Delivered = true
	} else {
		attempt.Error = err.Error()
		attempt.GiveUp = del.Attempts >= d.cfg.MaxAttempts
		attempt.RetryAt = time.Now().Add(ratelimit.Backoff(del.Attempts-1, d.cfg.RetryBase, d.cfg.RetryMax, rand.Float64) + d.cfg.RetryBase/2)
	}
	if rerr := d.store.RecordWebhookAttempt(context.WithoutCancel(ctx), del.ID, attempt); rerr != nil {
		d.log.Error("webhook record failed", "delivery_id", del.ID, "err", rerr)
	}
	if err != nil {
		d.log.Warn("webhook not delivered", "job_id", del.JobID, "delivery_id", del.ID, "attempt", del.Attempts, "give_up", attempt.GiveUp, "err", err)
	} else {
		d.log.Info("webhook delivered", "job_id", del.JobID, "delivery_id", del.ID, "attempt", del.Attempts, "status", status)
	}
	return err == nil
}

// payload is the body of a delivery: the finished job, or for
// person.changed the company changes a watch run found.
func (d *Deliverer) payload(ctx context.Context, del store.WebhookDelivery) ([]byte, error) {
	if del.Event == store.EventPersonChanged {
		watchID, changes, err := d.store.JobCompanyChanges(ctx, del.JobID)
		if err != nil {
			return nil, fmt.Errorf("load changes: %w", err)
		}
		p := PersonChanged{Event: del.Event, DeliveryID: del.ID, WatchID: watchID, JobID: del.JobID, People: []ChangedPerson{}}
		for _, c := range changes {
			p.People = append(p.People, ChangedPerson{Ref: c.Ref, Field: c.Field, Old: c.Old, New: c.New, Kind: c.Kind, At: c.At})
		}
		return json.Marshal(p)
	}
	job, err := d.store.JobByID(ctx, del.JobID)
	if err != nil {
		return nil, fmt.Errorf("load job: %w", err)
	}
	counts, err := d.store.RowCounts(ctx, del.JobID)
	if err != nil {
		return nil, fmt.Errorf("count rows: %w", err)
	}
	rows := make(map[string]int, len(counts)+1)
	for st, n := range counts {
		rows[string(st)] = n
	}
	rows["total"] = job.TotalRows
	unsettled, err := d.store.JobUnsettled(ctx, del.JobID)
	if err != nil {
		return nil, fmt.Errorf("unsettled credits: %w", err)
	}
	return json.Marshal(Payload{Event: del.Event, DeliveryID: del.ID, Job: Job{
		ID: job.ID, Name: job.Name, State: job.State, StateReason: job.StateReason, Rows: rows,
		Credits: map[string]any{"budget": job.BudgetCredits, "spent": job.CreditsSpent, "reserved": job.CreditsReserved,
			"unsettled": unsettled.Credits, "unsettled_reason": unsettled.Reason()},
		CreatedAt: job.CreatedAt, FinishedAt: job.FinishedAt, ResultsURL: "/v1/jobs/" + job.ID + "/results",
	}})
}

// post makes one attempt; a 2xx answer is success.
func (d *Deliverer) post(ctx context.Context, del store.WebhookDelivery) (int, error) {
	body, err := d.payload(ctx, del)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, del.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "enrichq-webhook")
	req.Header.Set(EventHeader, del.Event)
	req.Header.Set(DeliveryHeader, strconv.FormatInt(del.ID, 10))
	req.Header.Set(SignatureHeader, Sign(del.Secret, time.Now(), body))
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("receiver answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}
