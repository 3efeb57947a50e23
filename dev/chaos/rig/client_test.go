package rig_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/enrich/seed"
)

// resetOnce serves the fake vendor, but the first request carrying a given
// Idempotency-Key is worked on (and billed) by the fake and then answered
// with a connection reset, like the fake's reset fault.
type resetOnce struct {
	v    *enrichtest.Seed
	mu   sync.Mutex
	seen map[string]bool
	// replay, when set, answers the later sends of a key instead of the fake.
	replay http.HandlerFunc
}

func (h *resetOnce) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	h.mu.Lock()
	first := key != "" && !h.seen[key]
	h.seen[key] = true
	h.mu.Unlock()
	if !first {
		if h.replay != nil && key != "" {
			h.replay(w, r)
			return
		}
		h.v.ServeHTTP(w, r)
		return
	}
	h.v.ServeHTTP(httptest.NewRecorder(), r) // the work is done and billed; the answer never leaves
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// resettingClient serves h and returns a client of it whose connection is
// open already (a first call without a key), so that the next call reuses it.
func resettingClient(t *testing.T, h *resetOnce) *seed.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := seed.NewClient(seed.Config{BaseURL: srv.URL, APIKey: "test-key", HTTPClient: &http.Client{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Profile(context.Background(), enrich.ProfileQuery{ProfileURL: "https://platform.example/in/warm-up"}, ""); err != nil {
		t.Fatal(err)
	}
	return c
}

// A connection reset after the vendor billed a call: Go's http.Transport
// sends a request that has an Idempotency-Key (or is a GET) again by itself
// when a reused connection fails before any answer, the vendor replays the
// first answer and charges nothing for it, and the client reports the
// replay's charge (0) for a call that was billed.
func TestResetCallRetriedByTheTransportIsStillCharged(t *testing.T) {
	t.Parallel()
	fv := enrichtest.NewSeed(enrichtest.DefaultSeedOptions())
	c := resettingClient(t, &resetOnce{v: fv, seen: map[string]bool{}})
	before := fv.TotalCharged()
	res, err := c.Profile(context.Background(), enrich.ProfileQuery{Name: "VP Sales", Company: "Reset GmbH"}, "key-reset-1")
	billed := fv.TotalCharged() - before
	if billed == 0 {
		t.Fatal("the fake billed nothing: the test does not reset what it means to")
	}
	var reported int64
	switch ve, ok := enrich.AsError(err); {
	case err == nil:
		reported = res.Charge.Credits
	case ok && ve.OutcomeUnknown:
		return // counted at the reservation: fine
	case ok && ve.Charge != nil:
		reported = ve.Charge.Credits
	default:
		t.Fatalf("call: %v", err)
	}
	if reported < billed {
		t.Fatalf("the vendor billed %d credits for the call, the client reports %d (http.Transport re-sent it after the reset "+
			"and the vendor answered a free replay)", billed, reported)
	}
}

// The same reset, and then the replay itself is unusable (a malformed 200
// with X-Credits-Remaining but X-Credits-Charged: 0): the call's outcome is
// unknown and nothing in the error may settle it at 0.
func TestResetCallWithMalformedReplayIsCountedAtTheReservation(t *testing.T) {
	t.Parallel()
	c := resettingClient(t, &resetOnce{v: enrichtest.NewSeed(enrichtest.DefaultSeedOptions()), seen: map[string]bool{},
		replay: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Credits-Charged", "0")
			w.Header().Set("X-Credits-Remaining", "999")
			w.Header().Set("Idempotent-Replayed", "true")
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"profile": {"name": `))
		}})
	_, err := c.Profile(context.Background(), enrich.ProfileQuery{Name: "VP Sales", Company: "Reset GmbH"}, "key-reset-2")
	ve, ok := enrich.AsError(err)
	if !ok {
		t.Fatalf("call: %v, want a vendor error", err)
	}
	if !ve.OutcomeUnknown || ve.Charge != nil {
		t.Fatalf("error %v: outcome unknown %v, charge %+v; want unknown and no charge (counted at the reservation)", ve, ve.OutcomeUnknown, ve.Charge)
	}
}
