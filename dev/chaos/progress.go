package main

import (
	"context"
	"fmt"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
)

// progress is where a job stands.
type progress struct {
	state                     string
	finished                  bool
	total, terminal, inFlight int
	pending, retryWait        int
}

func (e *env) progress(ctx context.Context, jobID string) (progress, error) {
	job, err := e.db.JobByID(ctx, jobID)
	if err != nil {
		return progress{}, err
	}
	counts, err := e.db.RowCounts(ctx, jobID)
	if err != nil {
		return progress{}, err
	}
	p := progress{state: string(job.State), finished: job.FinishedAt != nil,
		inFlight: counts[domain.RowInFlight], pending: counts[domain.RowPending], retryWait: counts[domain.RowRetryWait]}
	for state, n := range counts {
		p.total += n
		if !state.Open() {
			p.terminal += n
		}
	}
	return p, nil
}

func (p progress) done() bool {
	return p.state != "queued" && p.state != "running" || p.finished
}

func (p progress) pct() float64 {
	if p.total == 0 {
		return 0
	}
	return 100 * float64(p.terminal) / float64(p.total)
}

// poll calls cond every 50 ms until it says true, within the bound.
func poll(ctx context.Context, within time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(within)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// waitMid waits until the job is mid-run: at least frac of its rows
// terminal and some in flight. It reports false when the job ended first.
func (e *env) waitMid(ctx context.Context, ph *phase, frac float64) (progress, bool, error) {
	var p progress
	err := poll(ctx, e.o.phaseTimeout, func() (bool, error) {
		var err error
		p, err = e.progress(ctx, ph.jobID)
		return err == nil && (p.done() || float64(p.terminal) >= frac*float64(p.total) && p.inFlight > 0), err
	})
	if err != nil {
		return p, false, fmt.Errorf("waiting for the job to be mid-run: %w", err)
	}
	if p.done() {
		ph.fail("the job ended before the fault could be injected: raise -rows or lower -vendor-rps")
		return p, false, nil
	}
	return p, true, nil
}

// waitJob waits for the phase's job to end (completed, paused, canceled).
func (e *env) waitJob(ctx context.Context, ph *phase) error {
	err := poll(ctx, e.o.phaseTimeout, func() (bool, error) {
		p, err := e.progress(ctx, ph.jobID)
		return err == nil && p.done(), err
	})
	if err != nil {
		p, _ := e.progress(ctx, ph.jobID)
		ph.fail("the job did not end within %s: %s, %d/%d rows terminal", e.o.phaseTimeout, p.state, p.terminal, p.total)
		return nil
	}
	ph.finished = true
	e.moneyAtCompletion(ctx, ph)
	return nil
}
