package maintenance

import (
	"context"
	"time"
)

// Service is one periodic step of the leader. Other packages contribute
// theirs (the platform's sync dispatch and token refresh) by this method
// set.
type Service interface {
	// Name labels the service in logs and in RunOnce's Stats.
	Name() string
	// Interval is the time between two steps while the Maintainer leads.
	Interval() time.Duration
	// Step does one round of the work and returns how much it did (rows,
	// chunks, jobs: the service's unit). It must be safe to run from
	// several schedulers at once: the lock only keeps them from doing the
	// same work twice in a row.
	Step(ctx context.Context) (did int, err error)
}

// A Service may bound its own steps with a method Timeout() time.Duration
// (a positive value); otherwise the Maintainer's StepTimeout does. A step's
// context ends at the timeout: the step stops, and the next is an interval
// later.

// ServiceFunc is a Service made of a function, for a step that is a plain
// method of another type.
type ServiceFunc struct {
	Label string
	// Every is the interval; zero takes DefaultInterval.
	Every time.Duration
	// Limit bounds a step; zero takes the Maintainer's StepTimeout.
	Limit time.Duration
	Do    func(ctx context.Context) (int, error)
}

// Timeout implements the optional bound of a step.
func (f ServiceFunc) Timeout() time.Duration { return f.Limit }

// Name implements Service.
func (f ServiceFunc) Name() string { return f.Label }

// Interval implements Service.
func (f ServiceFunc) Interval() time.Duration { return intervalOr(f.Every) }

// Step implements Service.
func (f ServiceFunc) Step(ctx context.Context) (int, error) { return f.Do(ctx) }
