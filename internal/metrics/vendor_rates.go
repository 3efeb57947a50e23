package metrics

import "github.com/prometheus/client_golang/prometheus"

// MaxVendorRateSegments bounds the segments whose vendor rates are
// exported: the most asked ones. A segment is an input kind and a country
// (some 5 × 250), and each has a series per vendor and stage, so only the
// busiest are kept; GET /v1/vendors shows every one.
const MaxVendorRateSegments = 32

// VendorRate is one vendor's learned rate for one segment and stage.
type VendorRate struct {
	Vendor, Segment, Stage string
	// HitRate is the share of asks it is expected to answer (observed,
	// blended with its prior).
	HitRate float64
	// ExpectedCharge is the expected charge of one ask, in budget units.
	ExpectedCharge float64
}

// VendorRates are the automatic vendor order's learned rates, as gauges.
// A nil *VendorRates records nothing.
type VendorRates struct {
	hit      *prometheus.GaugeVec
	charge   *prometheus.GaugeVec
	explored prometheus.Counter
}

// NewVendorRates registers the vendor rate gauges on reg.
func NewVendorRates(reg prometheus.Registerer) *VendorRates {
	labels := []string{"vendor", "segment", "stage"}
	g := &VendorRates{
		hit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "enrichq_vendor_hit_rate",
			Help: "Share of asks a vendor answers, per segment (input kind/country) and stage, as the automatic order learned it (observed, blended with its prior); the most asked segments only.",
		}, labels),
		charge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "enrichq_vendor_expected_charge_units",
			Help: "Expected charge of one ask of a vendor, hit or miss, in budget units (credits × credit_value), per segment and stage; the most asked segments only.",
		}, labels),
		explored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "enrichq_vendor_order_explored_total",
			Help: "Rows the automatic order asked in another order than its cheapest, to keep learning of a vendor later in it (bounded by explore and per segment by the asks it takes).",
		}),
	}
	reg.MustRegister(g.hit, g.charge, g.explored)
	return g
}

// Explored counts a row that explored another order.
func (g *VendorRates) Explored() {
	if g == nil {
		return
	}
	g.explored.Inc()
}

// Set replaces the gauges with rates (their segments already bounded by
// the caller to MaxVendorRateSegments).
func (g *VendorRates) Set(rates []VendorRate) {
	if g == nil {
		return
	}
	g.hit.Reset()
	g.charge.Reset()
	for _, r := range rates {
		g.hit.WithLabelValues(r.Vendor, r.Segment, r.Stage).Set(r.HitRate)
		g.charge.WithLabelValues(r.Vendor, r.Segment, r.Stage).Set(r.ExpectedCharge)
	}
}
