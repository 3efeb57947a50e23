package maintenance

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// serviceLoops are the services' loops while the Maintainer leads: one
// goroutine each, started together, stopped together.
type serviceLoops struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	now    func() time.Time
	until  atomic.Int64 // the lease holds until then (UnixNano on now's clock)
}

// startLoops starts a loop per service under ctx, leading until until.
func (m *Maintainer) startLoops(ctx context.Context, now func() time.Time, ttl time.Duration, until time.Time) *serviceLoops {
	ctx, cancel := context.WithCancel(ctx)
	l := &serviceLoops{cancel: cancel, now: now}
	l.holdUntil(until)
	timeout := m.stepTimeout(ttl)
	for _, s := range m.services {
		l.wg.Go(func() { m.loop(ctx, l, s, timeout) })
	}
	return l
}

// holdUntil says how long the lease holds: a loop does not start a step
// past it.
func (l *serviceLoops) holdUntil(t time.Time) { l.until.Store(t.UnixNano()) }

func (l *serviceLoops) leading() bool { return l.now().UnixNano() < l.until.Load() }

// stop ends every loop (their steps' contexts end) and waits for them.
func (l *serviceLoops) stop() {
	l.cancel()
	l.wg.Wait()
}

// loop steps s at once, then every interval, until ctx ends. A step past its
// interval is not caught up: the next starts an interval after it began or
// at the tick after it ends.
func (m *Maintainer) loop(ctx context.Context, l *serviceLoops, s Service, timeout time.Duration) {
	t := time.NewTicker(s.Interval())
	defer t.Stop()
	for {
		if l.leading() {
			did, err := m.step(ctx, s, timeout)
			m.report(ctx, s.Name(), did, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// report logs what a step did (when it did something) and its failure, and
// tells the hook.
func (m *Maintainer) report(ctx context.Context, name string, did int, err error) {
	switch {
	case err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled):
		// Stopped with the loops: the lease was lost or the scheduler stops.
	case err != nil:
		m.log.Error("maintenance failed", "service", name, "err", err)
	case did > 0:
		m.log.Info("maintenance", name, did)
	}
	if m.Hooks.Stepped != nil {
		m.Hooks.Stepped(name, did, err)
	}
}
