// Package metrics defines enrichq's Prometheus metrics. Constructors take a
// prometheus.Registerer, so each process (and each test) owns its registry.
// Labels never carry job, row or tenant ids: their cardinality is bounded.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Pipeline is what the worker measures. A nil *Pipeline records nothing.
type Pipeline struct {
	vendorCalls *prometheus.CounterVec
	throttled   prometheus.Counter
	credits     *prometheus.CounterVec
	rows        *prometheus.CounterVec
	jobDuration prometheus.Histogram
	drift       *prometheus.GaugeVec
	driftSeen   *prometheus.CounterVec
	price       *prometheus.GaugeVec
	priceChange *prometheus.CounterVec
	witnessed   prometheus.Counter
	vendorOut   *prometheus.CounterVec
	disputed    *prometheus.CounterVec
	wrongPerson *prometheus.CounterVec
}

// NewPipeline registers the pipeline's metrics on reg.
func NewPipeline(reg prometheus.Registerer) *Pipeline {
	p := &Pipeline{
		vendorCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "enrichq_vendor_calls_total",
			Help: "Vendor calls by endpoint and outcome (ok, rate_limited, transient, permanent, unauthorized, forbidden, error).",
		}, []string{"endpoint", "outcome"}),
		throttled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "enrichq_vendor_429_total",
			Help: "Vendor answers 429 (rate limited).",
		}),
		credits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "enrichq_credits_spent_total",
			Help: "Credits spent, by stage (profile, email, phone; bulk for what a bulk call's split does not explain).",
		}, []string{"stage"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "enrichq_rows_finished_total",
			Help: "Rows that reached a terminal state, by state.",
		}, []string{"state"}),
		jobDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "enrichq_job_duration_seconds",
			Help:    "From submit to finish, of jobs finished by this process.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 16), // 1 s .. 9 h
		}),
	}
	p.drift = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "enrichq_credit_drift_credits",
		Help: "The ledger's spend minus what the vendor's balance readings (X-Credits-Remaining) show billed: of the job that finished last (scope job), of the vendor key today, UTC (scope account_day).",
	}, []string{"scope"})
	p.driftSeen = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "enrichq_credit_drift_seen_total",
		Help: "Times a drift between the ledger and the vendor's balance readings was seen, by scope (job, account_day).",
	}, []string{"scope"})
	p.price = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "enrichq_vendor_price_credits",
		Help: "What the vendor charges for a class of answer (profile/name_company/no_match, email/miss...), as its fresh answers showed (X-Credits-Charged).",
	}, []string{"class"})
	p.priceChange = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "enrichq_vendor_price_changes_total",
		Help: "Times a fresh answer showed a price other than the one learned for its class.",
	}, []string{"class"})
	p.witnessed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "enrichq_credits_witness_settled_total",
		Help: "Calls whose charge, inferred, the vendor's balance readings (X-Credits-Remaining) pinned exactly and settled.",
	})
	p.vendorOut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "enrichq_vendor_out_total",
		Help: "Times a vendor was taken out of a tenant's waterfall, by vendor and why (out_of_credits, unauthorized, forbidden).",
	}, []string{"vendor", "class"})
	p.disputed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "enrichq_vendor_charges_disputed_total",
		Help: "Vendor calls whose charge header was outside the contract's range (below 0, above the most the answer may cost): settled at the contract's price, the ledger line marked disputed.",
	}, []string{"vendor"})
	p.wrongPerson = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "enrichq_vendor_wrong_person_total",
		Help: "Matches a vendor billed that were not the person asked for (not working at the company asked: a former employee, a namesake): paid for, not delivered.",
	}, []string{"vendor"})
	reg.MustRegister(p.vendorCalls, p.throttled, p.credits, p.rows, p.jobDuration, p.drift, p.driftSeen, p.price, p.priceChange, p.witnessed, p.vendorOut, p.disputed, p.wrongPerson)
	return p
}

// VendorCall counts one vendor call.
func (p *Pipeline) VendorCall(endpoint, outcome string) {
	if p == nil {
		return
	}
	p.vendorCalls.WithLabelValues(endpoint, outcome).Inc()
	if outcome == "rate_limited" {
		p.throttled.Inc()
	}
}

// VendorOut counts a vendor taken out of a tenant's waterfall (class: the
// error's class). Vendors are the configured few: a bounded label.
func (p *Pipeline) VendorOut(vendor, class string) {
	if p == nil {
		return
	}
	p.vendorOut.WithLabelValues(vendor, class).Inc()
}

// ChargeDisputed counts a call whose charge the vendor's contract does not
// allow (docs/money.md). Vendors are the configured few: a bounded label.
func (p *Pipeline) ChargeDisputed(vendor string) {
	if p == nil {
		return
	}
	p.disputed.WithLabelValues(vendor).Inc()
}

// WrongPerson counts a match a vendor billed that was not the person asked
// for (enrich.Answer.WrongPerson): not delivered, paid for. A share of them
// rising says a vendor's floors (min_likelihood) are too low for the list.
func (p *Pipeline) WrongPerson(vendor string) {
	if p == nil {
		return
	}
	p.wrongPerson.WithLabelValues(vendor).Inc()
}

// Credits adds credits spent on a stage.
func (p *Pipeline) Credits(stage string, n int64) {
	if p == nil || n <= 0 {
		return
	}
	p.credits.WithLabelValues(stage).Add(float64(n))
}

// RowFinished counts a row reaching a terminal state.
func (p *Pipeline) RowFinished(state string) {
	if p == nil {
		return
	}
	p.rows.WithLabelValues(state).Inc()
}

// JobFinished observes a finished job's duration.
func (p *Pipeline) JobFinished(d time.Duration) {
	if p == nil {
		return
	}
	p.jobDuration.Observe(d.Seconds())
}

// CreditDrift records the drift between the ledger and the vendor's balance
// readings over scope ("job", "account_day").
func (p *Pipeline) CreditDrift(scope string, drift int64) {
	if p == nil {
		return
	}
	p.drift.WithLabelValues(scope).Set(float64(drift))
	if drift != 0 {
		p.driftSeen.WithLabelValues(scope).Inc()
	}
}

// VendorPrice records the learned price of a class; changed counts a change.
func (p *Pipeline) VendorPrice(class string, credits int64, changed bool) {
	if p == nil {
		return
	}
	p.price.WithLabelValues(class).Set(float64(credits))
	if changed {
		p.priceChange.WithLabelValues(class).Inc()
	}
}

// WitnessSettled counts calls settled by the balance witness.
func (p *Pipeline) WitnessSettled(n int) {
	if p == nil || n <= 0 {
		return
	}
	p.witnessed.Add(float64(n))
}

// HTTP is what the API measures. A nil *HTTP records nothing.
type HTTP struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewHTTP registers the API's metrics on reg.
func NewHTTP(reg prometheus.Registerer) *HTTP {
	h := &HTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "enrichq_http_requests_total",
			Help: "HTTP requests by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "enrichq_http_request_duration_seconds",
			Help:    "HTTP request duration by route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 10, 60},
		}, []string{"route"}),
	}
	reg.MustRegister(h.requests, h.duration)
	return h
}

// Request records one request; route is the mux pattern ("unmatched" when none).
// The method is labelled only when it is a standard one (MethodLabel): a
// client chooses it, unauthenticated, so it must not mint series.
func (h *HTTP) Request(route, method string, status int, d time.Duration) {
	if h == nil {
		return
	}
	h.requests.WithLabelValues(route, MethodLabel(method), strconv.Itoa(status)).Inc()
	h.duration.WithLabelValues(route).Observe(d.Seconds())
}

// MethodLabel is method when it is one of RFC 9110's and PATCH, else "other".
func MethodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "other"
}

// Handler serves reg in the Prometheus text format.
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttpHandler(reg)
}
