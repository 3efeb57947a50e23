package watches

import (
	"fmt"
	"time"
)

// Defaults of Limits.
const (
	DefaultMaxPerTenant   = 20
	DefaultCreatesPerHour = 10
	DefaultRunInterval    = time.Hour
	// CreateWindow is the window CreatesPerHour counts creations in.
	CreateWindow = time.Hour
	// InFlightRetry is when to ask again for a run refused because one is
	// going: a run takes minutes to hours, its job's status says when it ends.
	InFlightRetry = time.Minute
)

// Limits bound what a tenant's watches cost: each creation copies a job's
// inputs, and each run makes a job of all of them.
type Limits struct {
	// MaxPerTenant caps the watches a tenant has at once.
	MaxPerTenant int
	// CreatesPerHour caps the watches a tenant makes in an hour, deleted
	// ones too (a create, delete, create loop copies the inputs each time).
	CreatesPerHour int
	// RunInterval is the least time between two runs of one watch asked for
	// now; a run asked for while one of the watch is going is refused too.
	RunInterval time.Duration
}

// WithDefaults is l with each zero field its default.
func (l Limits) WithDefaults() Limits {
	if l.MaxPerTenant <= 0 {
		l.MaxPerTenant = DefaultMaxPerTenant
	}
	if l.CreatesPerHour <= 0 {
		l.CreatesPerHour = DefaultCreatesPerHour
	}
	if l.RunInterval <= 0 {
		l.RunInterval = DefaultRunInterval
	}
	return l
}

// LimitError: the tenant has as many watches as it may.
type LimitError struct{ Limit int }

func (e *LimitError) Error() string {
	return fmt.Sprintf("this tenant has %d watches, the most it may have; delete one to make another", e.Limit)
}

// ThrottleError: not now; RetryAfter says when.
type ThrottleError struct {
	Message    string
	RetryAfter time.Duration
}

func (e *ThrottleError) Error() string { return e.Message }

// CreateFacts are what the store found, under the tenant's lock, before it
// stores a watch.
type CreateFacts struct {
	Watches int // the tenant's watches now
	// Created is the watches the tenant made in the last CreateWindow
	// (deleted ones too); Oldest the first of them.
	Created int
	Oldest  time.Time
	Now     time.Time
}

// AdmitCreate refuses a watch past the tenant's limit (*LimitError) or its
// creation rate (*ThrottleError).
func (l Limits) AdmitCreate(f CreateFacts) error {
	l = l.WithDefaults()
	if f.Watches >= l.MaxPerTenant {
		return &LimitError{Limit: l.MaxPerTenant}
	}
	if f.Created >= l.CreatesPerHour {
		return &ThrottleError{RetryAfter: max(time.Second, f.Oldest.Add(CreateWindow).Sub(f.Now)), Message: fmt.Sprintf(
			"this tenant made %d watches in the last hour, the most it may; retry later", l.CreatesPerHour)}
	}
	return nil
}

// RunFacts are what the store found, under the watch's lock, before it
// starts a run asked for now.
type RunFacts struct {
	InFlight   bool       // a run of the watch has a job not finished
	LastManual *time.Time // when the last run asked for now started; nil: none
	Now        time.Time
}

// AdmitRun refuses a run asked for now while one of the watch is going, or
// sooner than RunInterval after the last one asked for (*ThrottleError).
func (l Limits) AdmitRun(f RunFacts) error {
	l = l.WithDefaults()
	if f.InFlight {
		return &ThrottleError{RetryAfter: InFlightRetry,
			Message: "a run of this watch is going; ask again when its job has finished (or cancel it and wait for it to end)"}
	}
	if f.LastManual != nil {
		if wait := f.LastManual.Add(l.RunInterval).Sub(f.Now); wait > 0 {
			return &ThrottleError{RetryAfter: max(time.Second, wait), Message: fmt.Sprintf(
				"this watch was run %s ago; a watch may be run now once every %s", f.Now.Sub(*f.LastManual).Round(time.Second), l.RunInterval)}
		}
	}
	return nil
}
