package config

import (
	"errors"
	"time"
)

// Scheduler configures cmd/scheduler, the leader's sweeps.
type Scheduler struct {
	Common
	// Webhooks: completion callbacks are delivered when enabled.
	Webhooks Webhooks
	// Platform: due member syncs, token refresh and expiry reports, when enabled.
	Platform Platform

	// Tuning, not read from the environment: 0 takes internal/jobs' default.

	// SweepInterval is the period of the sweeps (maintenance.DefaultInterval).
	SweepInterval time.Duration
	// MaxAttempts: a row whose lease expires that many times ends failed (jobs.DefaultMaxAttempts).
	MaxAttempts int
	// Lease of member sync rows (jobs.DefaultLease).
	Lease time.Duration
	// ChunkSize is the members per sync task (jobs.DefaultChunkSize).
	ChunkSize int
	// JobWindow is how many chunks of one job are in the queue at once (store.DefaultWindow).
	JobWindow int
}

func defaultScheduler() Scheduler {
	return Scheduler{Common: defaultCommon()}
}

// SchedulerFromEnv maps the environment (getenv: os.Getenv in production)
// onto the scheduler's defaults and validates the result.
func SchedulerFromEnv(getenv func(string) string) (Scheduler, error) {
	c := defaultScheduler()
	err := load(getenv, func(r *reader) {
		c.Common.read(r)
		c.Webhooks.read(r)
		c.Platform.read(r)
	}, func() error { return c.validate() })
	return c, err
}

func (c Scheduler) validate() error {
	return errors.Join(c.Common.validate(), c.Platform.validate())
}
