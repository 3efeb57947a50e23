package maintenance_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// RunOnce steps every service once, in order; a failed step names its
// service and does not keep the later ones from running.
func TestRunOnceStepsEveryServiceInOrder(t *testing.T) {
	var order []string
	step := func(name string, did int, err error) maintenance.Service {
		return maintenance.ServiceFunc{Label: name, Do: func(context.Context) (int, error) {
			order = append(order, name)
			return did, err
		}}
	}
	boom := errors.New("boom")
	m := maintenance.NewMaintainer(nil, discard, step("a", 1, nil), step("b", 0, boom), step("c", 3, nil))
	st, err := m.RunOnce(context.Background())
	if !errors.Is(err, boom) || err.Error() != "maintenance b: boom" {
		t.Fatalf("err %v, want b's failure", err)
	}
	if !reflect.DeepEqual(order, []string{"a", "b", "c"}) || !reflect.DeepEqual(st, maintenance.Stats{"a": 1, "b": 0, "c": 3}) {
		t.Fatalf("order %v, stats %v", order, st)
	}
}

// The scheduler's own services run in the order of today's round: lost
// leases, a lost queue, dead reservations, jobs whose allowance renewed,
// due chunks, finished jobs, the feed, expired uploads, retention, old commit
// marks; each on the interval it was given, DefaultInterval by default.
func TestServicesOrderAndIntervals(t *testing.T) {
	var names []string
	for _, s := range maintenance.Services(nil, nil, maintenance.Settings{}, nil) {
		names = append(names, s.Name())
		if s.Interval() != maintenance.DefaultInterval {
			t.Errorf("%s: interval %s, want the default %s", s.Name(), s.Interval(), maintenance.DefaultInterval)
		}
	}
	want := []string{"lease_rescuer", "queue_watcher", "reservation_expirer", "allowance_resumer", "watch_scheduler", "chunk_dispatcher", "job_finisher", "watch_differ", "feed_advancer", "upload_expirer", "spool_sweeper", "retention_purger", "commit_mark_pruner"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("services %v, want %v", names, want)
	}
	for _, s := range maintenance.Services(nil, nil, maintenance.Settings{Interval: time.Second}, nil) {
		if s.Interval() != time.Second {
			t.Errorf("%s: interval %s, want 1s", s.Name(), s.Interval())
		}
	}
}

// counter is a service that counts its steps.
type counter struct {
	name  string
	every time.Duration
	n     atomic.Int64
}

func (c *counter) Name() string            { return c.name }
func (c *counter) Interval() time.Duration { return c.every }
func (c *counter) Step(context.Context) (int, error) {
	c.n.Add(1)
	return 1, nil
}

// events is a hook's channel: a send never blocks the maintainer (a full
// channel drops the event; the test reads as they come).
func events[T any]() (chan T, func(T)) {
	ch := make(chan T, 256)
	return ch, func(v T) {
		select {
		case ch <- v:
		default:
		}
	}
}

// waitFor reads ch until ok says done, failing the test past a generous
// deadline (a bound for a broken maintainer, not a timing).
func waitFor[T any](t *testing.T, ch <-chan T, what string, ok func(T) bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case v := <-ch:
			if ok(v) {
				return
			}
		case <-deadline:
			t.Fatalf("never: %s", what)
		}
	}
}

type step struct {
	name string
	err  error
}

// Of two maintainers on one database, one leads and steps its services on
// their intervals; the other tries for the lease, never holds it and never
// steps while the first leads, and takes over when the first stops.
func TestOneMaintainerLeads(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	fast, slow := &counter{name: "fast", every: 20 * time.Millisecond}, &counter{name: "slow", every: 200 * time.Millisecond}
	other := &counter{name: "other", every: 20 * time.Millisecond}
	ctx1, stop1 := context.WithCancel(context.Background())
	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	m1 := maintenance.NewMaintainer(st, discard, fast, slow)
	steps1, hook1 := events[step]()
	m1.Hooks.Stepped = func(name string, _ int, err error) { hook1(step{name, err}) }
	var wg sync.WaitGroup
	wg.Go(func() { _ = m1.Run(ctx1) })
	slowSteps := 0
	waitFor(t, steps1, "the first maintainer's slow service stepped twice", func(s step) bool {
		if s.name == "slow" {
			slowSteps++
		}
		return slowSteps == 2
	})
	// Each on its own interval: the slow one (10 times the fast one's) steps
	// less often, however the machine's load stretches the ticks.
	if f, s := fast.n.Load(), slow.n.Load(); f <= s {
		t.Fatalf("fast stepped %d times, slow %d: want each on its interval", f, s)
	}
	m2 := maintenance.NewMaintainer(st, discard, other)
	tries, hook2 := events[bool]()
	m2.Hooks.Lease = hook2
	var wg2 sync.WaitGroup
	wg2.Go(func() { _ = m2.Run(ctx2) })
	n := 0
	waitFor(t, tries, "the second maintainer tried for the lease three times", func(held bool) bool {
		if held {
			t.Fatal("the second maintainer took the lease while the first led")
		}
		n++
		return n == 3
	})
	if n := other.n.Load(); n != 0 {
		t.Fatalf("the second maintainer stepped %d times while the first led", n)
	}
	stop1()
	wg.Wait()
	waitFor(t, tries, "the second maintainer took over", func(held bool) bool { return held })
	for other.n.Load() == 0 {
		waitFor(t, tries, "the second maintainer's service stepped", func(bool) bool { return true })
	}
	stop2()
	wg2.Wait()
}

// Each service runs on its own loop: a step stuck in a slow call holds up
// neither the others' steps nor the lease; a step past its timeout ends
// with its context; stopping the maintainer ends the steps under way.
func TestSlowStepHoldsUpNoOther(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	blocked := func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	stuck := maintenance.ServiceFunc{Label: "stuck", Every: 20 * time.Millisecond, Do: blocked}
	bounded := maintenance.ServiceFunc{Label: "bounded", Every: 20 * time.Millisecond, Limit: 50 * time.Millisecond, Do: blocked}
	fast := &counter{name: "fast", every: 20 * time.Millisecond}
	m := maintenance.NewMaintainer(st, discard, stuck, bounded, fast)
	m.StepTimeout = time.Hour // stuck's steps: longer than the test
	steps, hook := events[step]()
	m.Hooks.Stepped = func(name string, _ int, err error) { hook(step{name, err}) }
	renewals, leaseHook := events[bool]()
	m.Hooks.Lease = leaseHook
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = m.Run(ctx) })
	fastSteps, timedOut := 0, false
	waitFor(t, steps, "three steps of fast and a timed-out step of bounded, while stuck's first step blocks", func(s step) bool {
		switch s.name {
		case "stuck":
			t.Fatalf("stuck's step ended: %v", s.err)
		case "fast":
			fastSteps++
		case "bounded":
			if !errors.Is(s.err, context.DeadlineExceeded) {
				t.Fatalf("bounded's step: %v, want its timeout", s.err)
			}
			timedOut = true
		}
		return fastSteps >= 3 && timedOut
	})
	held := 0
	waitFor(t, renewals, "two renewals of the lease while stuck's step blocks", func(h bool) bool {
		if !h {
			t.Fatal("the lease was lost")
		}
		held++
		return held == 2
	})
	stop()
	wg.Wait() // returns: stuck's step ended with the loops
	waitFor(t, steps, "stuck's step ended by the stop", func(s step) bool { return s.name == "stuck" && errors.Is(s.err, context.Canceled) })
}
