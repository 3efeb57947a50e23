// Package maintenance is the scheduler's periodic work, run by one leader:
// small services, one a file, each with its own Config, stepped in turn by
// a Maintainer while it holds the scheduler's lease (a row in Postgres,
// store.Lease). Every step is safe to run from several schedulers at once
// (conditional updates, SKIP LOCKED); the lease keeps them from doing it
// twice over.
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

// Maintainer steps its services, in their order, each on its interval,
// while it holds the scheduler's lease.
type Maintainer struct {
	store    *store.Store
	services []Service
	log      *slog.Logger
	// LeaseTTL is how long the leader's lease lives unrenewed; default
	// max(DefaultLeaseTTL, 3 ticks).
	LeaseTTL time.Duration
	// Now is the clock the lease's durations are measured on; default time.Now.
	Now func() time.Time
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

// tick is how often Run renews (or tries for) the lease and looks at the services: the shortest
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

// Run steps the services until ctx ends, while it holds the scheduler's
// lease; without it, it tries for the lease every tick. On taking the lease
// it steps every service at once; then each when its interval has passed.
func (m *Maintainer) Run(ctx context.Context) error {
	tick := m.tick()
	t := time.NewTicker(tick)
	defer t.Stop()
	ttl := m.LeaseTTL
	if ttl <= 0 {
		ttl = max(DefaultLeaseTTL, 3*tick)
	}
	lease := m.store.NewLease(leaseName, leaseHolder(), ttl, m.Now)
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := lease.Release(rctx); err != nil {
			m.log.Warn("scheduler lease not released; another scheduler takes it when it expires", "ttl", ttl, "err", err)
		}
	}()
	last := make([]time.Time, len(m.services)) // of each service's last step
	leading := false
	for {
		held, err := lease.Hold(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			m.log.Error("scheduler lease", "err", err, "held", held)
		case held && !leading:
			m.log.Info("scheduler lock taken: running maintenance", "tick", tick, "services", len(m.services),
				"holder", lease.Holder(), "ttl", ttl)
		case !held && leading:
			m.log.Warn("scheduler lock lost", "holder", lease.Holder())
			clear(last) // the next lease holder steps everything at once
		}
		leading = held
		if leading {
			now := time.Now()
			// Due at the tick nearest its interval: a ticker's jitter does
			// not push a step to the tick after. A round stops when the
			// lease runs out under it.
			st, err := m.round(ctx, func(i int) bool {
				if !lease.Held() {
					return false
				}
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

// leaseHolder names this process in the lease: host, pid and a random part
// (a restarted process is another holder).
func leaseHolder() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
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
