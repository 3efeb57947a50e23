package jobs

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/enrichq/enrichq/internal/store"
)

// SweeperConfig tunes the scheduler's sweeps. Zero values take the defaults.
type SweeperConfig struct {
	// Interval between sweeps. Default 5s.
	Interval time.Duration
	// Recheck is how long a chunk handed to the queue is trusted to be there
	// before the sweep hands it again (a no-op when it is: deterministic task ids). Default 1m.
	Recheck time.Duration
	// MaxAttempts: a row whose lease expires that many times ends failed. Default 8.
	MaxAttempts int
	// Batch caps the rows and chunks one sweep handles. Default 1000.
	Batch int
	// Window is how many chunks of one job are in the queue at once;
	// default store.DefaultWindow.
	Window int
}

// DefaultRecheck is how long a chunk handed to the queue is trusted to be
// there, by default.
const DefaultRecheck = time.Minute

// DefaultSweepInterval is the sweeps' period, by default.
const DefaultSweepInterval = 5 * time.Second

func (c *SweeperConfig) fill() {
	if c.Interval <= 0 {
		c.Interval = DefaultSweepInterval
	}
	if c.Recheck <= 0 {
		c.Recheck = DefaultRecheck
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Batch <= 0 {
		c.Batch = 1000
	}
}

// Sweeper is the scheduler's work: it finds work that is due or lost in
// Postgres and hands it to the queue, counts dead reservations as spent, and
// marks finished jobs. Every step is safe to run concurrently from several
// schedulers (conditional updates, SKIP LOCKED); Run also takes a Postgres
// advisory lock so that one scheduler works at a time.
type Sweeper struct {
	Store    *store.Store
	Enqueuer *Enqueuer
	Log      *slog.Logger
	Config   SweeperConfig
	// Steps run at the end of each sweep, under the same lock (the
	// platform's dispatch and token steps).
	Steps []interface {
		Step(ctx context.Context) (int, error)
	}
}

// SweepStats is what one sweep did.
type SweepStats struct {
	LeasesReclaimed     int
	ReservationsExpired int
	ChunksEnqueued      int
	JobsFinished        int
}

// Sweep runs every step once.
func (s *Sweeper) Sweep(ctx context.Context) (SweepStats, error) {
	s.Config.fill()
	var st SweepStats
	reclaimed, err := s.Store.ReclaimExpiredLeases(ctx, s.Config.MaxAttempts, s.Config.Batch)
	if err != nil {
		return st, err
	}
	st.LeasesReclaimed = len(reclaimed)
	// The chunks of reclaimed rows go back to the queue now, not after
	// Recheck: their worker is gone.
	for _, ref := range reclaimed {
		if err := s.Enqueuer.Requeue(ctx, ref); err != nil {
			return st, err // Dispatch hands them after Recheck
		}
		st.ChunksEnqueued++
	}
	// Redis lost the queue: every chunk with work is handed again now, not
	// after Recheck.
	if lost, err := s.Enqueuer.QueueLost(ctx); err != nil {
		return st, err
	} else if lost {
		n, err := s.Store.ForgetEnqueued(ctx)
		if err != nil {
			return st, err
		}
		if n > 0 {
			s.logger().Warn("the queue was lost (Redis flushed or restarted empty): handing the open chunks to the queue again", "chunks", n)
		}
	}
	if st.ReservationsExpired, err = s.Store.ExpireReservations(ctx, s.Config.Batch); err != nil {
		return st, err
	}
	n, err := s.Enqueuer.Dispatch(ctx, s.Store, "", s.Config.Window, s.Config.Recheck, s.Config.Batch)
	st.ChunksEnqueued += n
	if err != nil {
		return st, err
	}
	finished, err := s.Store.FinishJobs(ctx, "")
	if err != nil {
		return st, err
	}
	st.JobsFinished = len(finished)
	for _, j := range finished {
		s.logger().Info("job finished", "job_id", j.ID, "state", j.State, "rows", j.TotalRows, "credits_spent", j.CreditsSpent)
	}
	// Give new results their feed positions, so ETL readers see them even
	// when nobody calls the API's feed.
	if _, err := s.Store.AdvanceResultsFeed(ctx); err != nil {
		return st, err
	}
	for _, step := range s.Steps {
		if _, err := step.Step(ctx); err != nil {
			return st, err
		}
	}
	return st, nil
}

func (s *Sweeper) logger() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

// Run sweeps every Interval until ctx ends, while it holds the scheduler lock.
func (s *Sweeper) Run(ctx context.Context) error {
	s.Config.fill()
	t := time.NewTicker(s.Config.Interval)
	defer t.Stop()
	var leader *store.Leadership
	defer func() {
		if leader != nil {
			leader.Release()
		}
	}()
	for {
		if leader == nil || !leader.Held(ctx) {
			if leader != nil {
				s.logger().Warn("scheduler lock lost")
				leader.Release()
				leader = nil
			}
			l, err := s.Store.TryLeadership(ctx, "scheduler")
			switch {
			case err != nil && ctx.Err() == nil:
				s.logger().Error("scheduler lock", "err", err)
			case l != nil:
				s.logger().Info("scheduler lock taken: sweeping", "interval", s.Config.Interval)
				leader = l
			}
		}
		if leader != nil {
			st, err := s.Sweep(ctx)
			if err != nil && !errors.Is(err, context.Canceled) {
				s.logger().Error("sweep failed", "err", err)
			} else if st != (SweepStats{}) {
				s.logger().Info("sweep", "leases_reclaimed", st.LeasesReclaimed, "reservations_expired", st.ReservationsExpired,
					"chunks_enqueued", st.ChunksEnqueued, "jobs_finished", st.JobsFinished)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
