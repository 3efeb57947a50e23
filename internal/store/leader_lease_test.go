package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store/storetest"
)

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// One process holds the lease while it renews it; another takes it over
// once it has seen one renewal unchanged for the TTL by its own clock (an
// hour off the first's: clocks need not agree), and no sooner; the first
// then knows it lost it; a lease released is taken at once.
func TestLeaseHandsOverWithinItsTTL(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	ttl := 10 * time.Second
	clockA := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	clockB := &fakeClock{t: clockA.Now().Add(time.Hour)}
	advance := func(d time.Duration) { clockA.Add(d); clockB.Add(d) }
	a := st.NewLease("sweeps", "a", ttl, clockA.Now)
	b := st.NewLease("sweeps", "b", ttl, clockB.Now)
	hold := func(l interface {
		Hold(context.Context) (bool, error)
	}, want bool, when string) {
		t.Helper()
		if got, err := l.Hold(ctx); err != nil || got != want {
			t.Fatalf("%s: Hold = %v, %v; want %v", when, got, err, want)
		}
	}
	hold(a, true, "a first")
	hold(b, false, "b while a holds it")
	for range 5 { // a renews every 5 s: b never takes it
		advance(5 * time.Second)
		hold(a, true, "a renewing")
		hold(b, false, "b while a renews")
	}
	// a stops renewing (its process died).
	advance(ttl - time.Second)
	hold(b, false, "b a second before the TTL since it saw a's last renewal")
	if !a.Held() {
		t.Fatal("a does not hold its lease within its TTL")
	}
	advance(time.Second)
	if a.Held() {
		t.Fatal("a still holds its lease a TTL after its last renewal")
	}
	hold(b, true, "b a TTL after a's last renewal")
	hold(a, false, "a after b took over")
	advance(3 * time.Second)
	hold(b, true, "b renewing")
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	hold(a, true, "a after b released it")
}
