// Package maintenance is the scheduler's periodic work, run by one leader:
// small services, one a file, each with its own Config. While a Maintainer
// holds the scheduler's lease (a row in Postgres, store.Lease) each service
// runs on a loop of its own, with its own ticker and a timeout per step
// (River's shape), so a slow step holds up neither the others nor the
// lease's renewal; losing the lease stops every loop. Every step is safe to
// run from several schedulers at once (conditional updates, SKIP LOCKED);
// the lease keeps them from doing it twice over.
package maintenance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/metrics"
	"github.com/enrichq/enrichq/internal/store"
)

const (
	// DefaultInterval is the time between two steps of a service.
	DefaultInterval = 5 * time.Second
	// DefaultBatch caps the rows, chunks or reservations one step handles.
	DefaultBatch = 1000
)

// leaseName names the leader's lease.
const leaseName = "scheduler"

// DefaultLeaseTTL is how long the scheduler's lease lives unrenewed (it is
// renewed every tick): a leader that dies without releasing it is replaced
// this long after its last renewal, plus a tick.
const DefaultLeaseTTL = 15 * time.Second

func intervalOr(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultInterval
	}
	return d
}

func batchOr(n int) int {
	if n <= 0 {
		return DefaultBatch
	}
	return n
}

func loggerOr(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.Default()
	}
	return log
}

// Settings are the scheduler's knobs, each given to the services that use
// it. Zero values take each service's default.
type Settings struct {
	Interval    time.Duration // of every service
	MaxAttempts int           // LeaseRescuer
	Batch       int           // LeaseRescuer, ReservationExpirer, ChunkDispatcher
	Recheck     time.Duration // ChunkDispatcher
	Window      int           // ChunkDispatcher
	Metrics     *metrics.Pipeline
	SpoolDir    string // SpoolSweeper: the API's spool folder ("": the system's temporary directory)
	ChunkSize   int    // WatchScheduler: rows of a watch run's chunk task
	// Now is the clock of the watches' slots and change lines; default time.Now.
	Now func() time.Time
}

// Services builds the scheduler's own services in the order a round steps
// them: lost leases first (their chunks go back to the queue at once), then
// a lost queue, dead reservations, jobs whose allowance renewed, due
// watch runs, due chunks, finished jobs, the watch runs' changes, the feed, expired uploads, spool folders left by a
// crash, data past its tenant's retention window, old commit marks.
func Services(st *store.Store, enq *jobs.Enqueuer, s Settings, log *slog.Logger) []Service {
	return []Service{
		NewLeaseRescuer(st, enq, LeaseRescuerConfig{Interval: s.Interval, MaxAttempts: s.MaxAttempts, Batch: s.Batch}),
		NewQueueWatcher(st, enq, QueueWatcherConfig{Interval: s.Interval}, log),
		NewReservationExpirer(st, ReservationExpirerConfig{Interval: s.Interval, Batch: s.Batch}),
		NewAllowanceResumer(st, AllowanceResumerConfig{Interval: s.Interval, Batch: s.Batch}, log),
		NewWatchScheduler(st, WatchSchedulerConfig{Interval: s.Interval, ChunkSize: s.ChunkSize, Now: s.Now}, log),
		NewChunkDispatcher(st, enq, ChunkDispatcherConfig{Interval: s.Interval, Recheck: s.Recheck, Window: s.Window, Batch: s.Batch}),
		NewJobFinisher(st, JobFinisherConfig{Interval: s.Interval, Metrics: s.Metrics}, log),
		NewWatchDiffer(st, WatchDifferConfig{Interval: s.Interval, Now: s.Now}, log),
		NewFeedAdvancer(st, FeedAdvancerConfig{Interval: s.Interval}),
		NewUploadExpirer(st, UploadExpirerConfig{Interval: s.Interval}),
		NewSpoolSweeper(SpoolSweeperConfig{Interval: s.Interval, Dir: s.SpoolDir}),
		NewRetentionPurger(st, RetentionPurgerConfig{Interval: s.Interval}),
		NewCommitMarkPruner(st, CommitMarkPrunerConfig{Interval: s.Interval}),
	}
}

// Stats is what a round did, by service name.
type Stats map[string]int

// Hooks let a caller (a test) follow the maintainer's turns without
// sleeping; each may be nil, and is called from the maintainer's
// goroutines.
type Hooks struct {
	// Lease is called after each try for the lease (or renewal of it),
	// with whether this maintainer holds it now.
	Lease func(held bool)
	// Stepped is called after each step of a service Run started, with
	// what the step did and its error.
	Stepped func(service string, did int, err error)
}

// Maintainer runs its services while it holds the scheduler's lease.
type Maintainer struct {
	store    *store.Store
	services []Service
	log      *slog.Logger
	// LeaseTTL is how long the leader's lease lives unrenewed; default
	// max(DefaultLeaseTTL, 3 ticks).
	LeaseTTL time.Duration
	// StepTimeout bounds a step of a service that states no Timeout of its
	// own; default the lease's TTL: a step never outlasts one lease.
	StepTimeout time.Duration
	// Now is the clock the lease's durations are measured on; default time.Now.
	Now func() time.Time
	// Hooks are called as the lease and the steps go.
	Hooks Hooks
}

// NewMaintainer builds a Maintainer of services (Services, then those other
// packages contribute); log nil is slog.Default().
func NewMaintainer(st *store.Store, log *slog.Logger, services ...Service) *Maintainer {
	return &Maintainer{store: st, services: services, log: loggerOr(log)}
}

// RunOnce steps every service once, in order, without the lock, each step
// within its timeout. A failed step does not keep the later ones from
// running: the error names the service.
func (m *Maintainer) RunOnce(ctx context.Context) (Stats, error) {
	st := Stats{}
	var errs []error
	for _, s := range m.services {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		did, err := m.step(ctx, s, m.stepTimeout(m.leaseTTL()))
		st[s.Name()] += did
		if err != nil {
			errs = append(errs, fmt.Errorf("maintenance %s: %w", s.Name(), err))
		}
	}
	return st, errors.Join(errs...)
}

// step runs one step of s within timeout.
func (m *Maintainer) step(ctx context.Context, s Service, timeout time.Duration) (int, error) {
	if t, ok := s.(interface{ Timeout() time.Duration }); ok && t.Timeout() > 0 {
		timeout = t.Timeout()
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	did, err := s.Step(sctx)
	if err != nil && errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("step timed out after %s: %w", timeout, err)
	}
	return did, err
}

// tick is how often Run renews (or tries for) the lease: the shortest
// interval of a service.
func (m *Maintainer) tick() time.Duration {
	t := DefaultInterval
	for i, s := range m.services {
		if i == 0 || s.Interval() < t {
			t = s.Interval()
		}
	}
	return max(t, time.Millisecond)
}

func (m *Maintainer) leaseTTL() time.Duration {
	if m.LeaseTTL > 0 {
		return m.LeaseTTL
	}
	return max(DefaultLeaseTTL, 3*m.tick())
}

func (m *Maintainer) stepTimeout(ttl time.Duration) time.Duration {
	if m.StepTimeout > 0 {
		return m.StepTimeout
	}
	return ttl
}

// Run holds the scheduler's lease until ctx ends: it tries for the lease
// every tick and, once it holds it, renews it every tick and runs every
// service on its own loop (each steps at once, then every interval); when
// the lease is lost it stops the loops (their steps' contexts end) and
// tries again.
func (m *Maintainer) Run(ctx context.Context) error {
	tick := m.tick()
	t := time.NewTicker(tick)
	defer t.Stop()
	ttl := m.leaseTTL()
	now := m.Now
	if now == nil {
		now = time.Now
	}
	lease := m.store.NewLease(leaseName, leaseHolder(), ttl, m.Now)
	var loops *serviceLoops
	defer func() {
		if loops != nil {
			loops.stop()
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := lease.Release(rctx); err != nil {
			m.log.Warn("scheduler lease not released; another scheduler takes it when it expires", "ttl", ttl, "err", err)
		}
	}()
	for {
		start := now()
		held, err := lease.Hold(ctx)
		if err != nil && ctx.Err() == nil {
			m.log.Error("scheduler lease", "err", err, "held", held)
		}
		switch {
		case held && loops == nil:
			m.log.Info("scheduler lock taken: running maintenance", "tick", tick, "services", len(m.services),
				"holder", lease.Holder(), "ttl", ttl)
			loops = m.startLoops(ctx, now, ttl, start.Add(ttl))
		case !held && loops != nil:
			m.log.Warn("scheduler lock lost: maintenance stopped", "holder", lease.Holder())
			loops.stop()
			loops = nil
		}
		if held {
			// The loops step only while the renewal just sent holds: a lease
			// that lapses before the next tick stops them at their next step.
			loops.holdUntil(start.Add(ttl))
		}
		if m.Hooks.Lease != nil {
			m.Hooks.Lease(held)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// leaseHolder names this process in the lease: host, pid and a random part
// (a restarted process is another holder).
func leaseHolder() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
