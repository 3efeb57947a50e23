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
	every time.Duration
	n     atomic.Int64
}

func (c *counter) Name() string            { return "counter" }
func (c *counter) Interval() time.Duration { return c.every }
func (c *counter) Step(context.Context) (int, error) {
	c.n.Add(1)
	return 1, nil
}

// Of two maintainers on one database, one leads and steps its services on
// their intervals; the other waits, and takes over when the first stops.
func TestOneMaintainerLeads(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	fast, slow := &counter{every: 20 * time.Millisecond}, &counter{every: 200 * time.Millisecond}
	other := &counter{every: 20 * time.Millisecond}
	ctx1, stop1 := context.WithCancel(context.Background())
	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	var wg sync.WaitGroup
	wg.Go(func() { _ = maintenance.NewMaintainer(st, discard, fast, slow).Run(ctx1) })
	deadline := time.Now().Add(10 * time.Second)
	for fast.n.Load() == 0 { // the first one leads
		if time.Now().After(deadline) {
			t.Fatal("the first maintainer never stepped")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var wg2 sync.WaitGroup
	wg2.Go(func() { _ = maintenance.NewMaintainer(st, discard, other).Run(ctx2) })
	time.Sleep(500 * time.Millisecond)
	if n := other.n.Load(); n != 0 {
		t.Fatalf("the second maintainer stepped %d times while the first led", n)
	}
	// Each on its own interval: the slow one (10 times the fast one's) steps
	// less often, however the machine's load stretches the ticks.
	f, s := fast.n.Load(), slow.n.Load()
	if s == 0 || f <= s {
		t.Fatalf("fast stepped %d times, slow %d: want each on its interval", f, s)
	}
	stop1()
	wg.Wait()
	deadline = time.Now().Add(10 * time.Second)
	for other.n.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the second maintainer never took over")
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop2()
	wg2.Wait()
}
