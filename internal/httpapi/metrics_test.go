package httpapi

import (
	"math/rand/v2"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/enrichq/enrichq/internal/metrics"
)

// seriesCount is the number of series reg holds.
func seriesCount(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		n += len(f.GetMetric())
	}
	return n
}

// A client picks the method, unauthenticated: a thousand made-up methods
// must not mint a thousand series.
func TestMetricsRandomMethodsAddNoSeries(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	b := setup(t, func(d *deps) { d.Metrics = metrics.NewHTTP(reg) })

	b.call(t, "BREW", "/healthz", "", nil) // the one series of an unknown method
	before := seriesCount(t, reg)
	rng := rand.New(rand.NewPCG(1, 2))
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for range 1000 {
		m := make([]byte, 4+rng.IntN(8))
		for i := range m {
			m[i] = letters[rng.IntN(len(letters))]
		}
		resp, _ := b.call(t, string(m), "/healthz", "", nil)
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("%s /healthz: %d, want 405", m, resp.StatusCode)
		}
	}
	if after := seriesCount(t, reg); after != before {
		t.Fatalf("series: %d before, %d after 1,000 requests with random methods", before, after)
	}
	b.call(t, http.MethodGet, "/healthz", "", nil)
	if after := seriesCount(t, reg); after == before {
		t.Fatal("a GET added no series: the test counts nothing")
	}
}
