// Package maintenance is the scheduler's periodic work, run by one leader:
// small services, one a file, each with its own Config, stepped in turn by
// a Maintainer while it holds the scheduler's Postgres advisory lock. Every
// step is safe to run from several schedulers at once (conditional updates,
// SKIP LOCKED); the lock keeps them from doing it twice over.
package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// lockName names the advisory lock of the leader.
const lockName = "scheduler"

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
}

// Services builds the scheduler's own services in the order a round steps
// them: lost leases first (their chunks go back to the queue at once), then
// a lost queue, dead reservations, jobs whose allowance renewed, due
// chunks, finished jobs, the feed, expired uploads, spool folders left by a
// crash, data past its tenant's retention window.
func Services(st *store.Store, enq *jobs.Enqueuer, s Settings, log *slog.Logger) []Service {
	return []Service{
		NewLeaseRescuer(st, enq, LeaseRescuerConfig{Interval: s.Interval, MaxAttempts: s.MaxAttempts, Batch: s.Batch}),
		NewQueueWatcher(st, enq, QueueWatcherConfig{Interval: s.Interval}, log),
		NewReservationExpirer(st, ReservationExpirerConfig{Interval: s.Interval, Batch: s.Batch}),
		NewAllowanceResumer(st, AllowanceResumerConfig{Interval: s.Interval, Batch: s.Batch}, log),
		NewChunkDispatcher(st, enq, ChunkDispatcherConfig{Interval: s.Interval, Recheck: s.Recheck, Window: s.Window, Batch: s.Batch}),
		NewJobFinisher(st, JobFinisherConfig{Interval: s.Interval, Metrics: s.Metrics}, log),
		NewFeedAdvancer(st, FeedAdvancerConfig{Interval: s.Interval}),
		NewUploadExpirer(st, UploadExpirerConfig{Interval: s.Interval}),
		NewSpoolSweeper(SpoolSweeperConfig{Interval: s.Interval, Dir: s.SpoolDir}),
		NewRetentionPurger(st, RetentionPurgerConfig{Interval: s.Interval}),
	}
}

// Stats is what a round did, by service name.
type Stats map[string]int

// Maintainer steps its services, in their order, each on its interval,
// while it holds the scheduler lock.
type Maintainer struct {
	store    *store.Store
	services []Service
	log      *slog.Logger
}

// NewMaintainer builds a Maintainer of services (Services, then those other
// packages contribute); log nil is slog.Default().
func NewMaintainer(st *store.Store, log *slog.Logger, services ...Service) *Maintainer {
	return &Maintainer{store: st, services: services, log: loggerOr(log)}
}

// RunOnce steps every service once, in order, without the lock. A failed
// step does not keep the later ones from running: the error names the
// service.
func (m *Maintainer) RunOnce(ctx context.Context) (Stats, error) {
	return m.round(ctx, func(int) bool { return true })
}

func (m *Maintainer) round(ctx context.Context, due func(i int) bool) (Stats, error) {
	st := Stats{}
	var errs []error
	for i, s := range m.services {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if !due(i) {
			continue
		}
		did, err := s.Step(ctx)
		st[s.Name()] += did
		if err != nil {
			errs = append(errs, fmt.Errorf("maintenance %s: %w", s.Name(), err))
		}
	}
	return st, errors.Join(errs...)
}

// tick is how often Run looks at the lock and the services: the shortest
// interval.
func (m *Maintainer) tick() time.Duration {
	t := DefaultInterval
	for i, s := range m.services {
		if i == 0 || s.Interval() < t {
			t = s.Interval()
		}
	}
	return max(t, time.Millisecond)
}

// Run steps the services until ctx ends, while it holds the scheduler lock;
// without it, it tries for the lock every tick. On taking the lock it steps
// every service at once; then each when its interval has passed.
func (m *Maintainer) Run(ctx context.Context) error {
	tick := m.tick()
	t := time.NewTicker(tick)
	defer t.Stop()
	var leader *store.Leadership
	defer func() {
		if leader != nil {
			leader.Release()
		}
	}()
	last := make([]time.Time, len(m.services)) // of each service's last step
	for {
		if leader == nil || !leader.Held(ctx) {
			if leader != nil {
				m.log.Warn("scheduler lock lost")
				leader.Release()
				leader = nil
				clear(last) // the next lock holder steps everything at once
			}
			l, err := m.store.TryLeadership(ctx, lockName)
			switch {
			case err != nil && ctx.Err() == nil:
				m.log.Error("scheduler lock", "err", err)
			case l != nil:
				m.log.Info("scheduler lock taken: running maintenance", "tick", tick, "services", len(m.services))
				leader = l
			}
		}
		if leader != nil {
			now := time.Now()
			// Due at the tick nearest its interval: a ticker's jitter does
			// not push a step to the tick after.
			st, err := m.round(ctx, func(i int) bool {
				if !last[i].IsZero() && now.Sub(last[i]) < m.services[i].Interval()-tick/2 {
					return false
				}
				last[i] = now
				return true
			})
			m.report(st, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// report logs what a round did (the services that did something) and its
// failures.
func (m *Maintainer) report(st Stats, err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		m.log.Error("maintenance failed", "err", err)
	}
	var attrs []any
	for _, s := range m.services {
		if n := st[s.Name()]; n > 0 {
			attrs = append(attrs, s.Name(), n)
		}
	}
	if len(attrs) > 0 {
		m.log.Info("maintenance", attrs...)
	}
}
