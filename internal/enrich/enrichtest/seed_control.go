package enrichtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"golang.org/x/time/rate"
)

// The /_fake endpoints: read-only views for scripts in another process, and
// a way to change faults while the fake runs. No auth: the fake is a test tool.

// SeedLedgerSummary is the answer of GET /_fake/ledger.
type SeedLedgerSummary struct {
	TotalCredits      int64             `json:"total_credits"`
	RemainingCredits  int64             `json:"remaining_credits"`
	BilledCalls       int64             `json:"billed_calls"`
	CallsByEndpoint   map[string]int64  `json:"calls_by_endpoint"`   // billed calls
	CreditsByEndpoint map[string]int64  `json:"credits_by_endpoint"` // credits charged
	ByStatus          map[int]int64     `json:"by_status"`           // every /v1 answer
	Entries           []SeedLedgerEntry `json:"entries,omitempty"`   // with ?entries=1
}

// Summary sums the ledger up.
func (v *Seed) Summary() SeedLedgerSummary {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := SeedLedgerSummary{
		TotalCredits:      v.charged,
		RemainingCredits:  v.opts.StartCredits - v.charged,
		BilledCalls:       int64(len(v.ledger)),
		CallsByEndpoint:   map[string]int64{},
		CreditsByEndpoint: map[string]int64{},
		ByStatus:          map[int]int64{},
	}
	for _, e := range v.ledger {
		s.CallsByEndpoint[e.Endpoint]++
		s.CreditsByEndpoint[e.Endpoint] += e.Credits
	}
	for k, n := range v.stats.ByStatus {
		s.ByStatus[k] = n
	}
	return s
}

func (v *Seed) serveLedger(w http.ResponseWriter, r *http.Request) {
	s := v.Summary()
	if r.URL.Query().Get("entries") == "1" {
		s.Entries = v.Ledger()
	}
	writeJSON(w, http.StatusOK, s)
}

func (v *Seed) serveStats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, v.Stats())
}

func (v *Seed) serveFaults(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, v.Faults())
}

// postFaults applies a partial update: fields absent from the JSON keep
// their value. It answers the faults now in force.
func (v *Seed) postFaults(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	v.mu.Lock()
	f := v.faults
	if err = json.Unmarshal(body, &f); err == nil {
		err = f.Validate()
	}
	if err == nil {
		v.setFaultsLocked(f)
	}
	v.mu.Unlock()
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, f)
}

func (v *Seed) setFaultsLocked(f SeedFaults) {
	v.faults = f
	if f.RPS <= 0 { // unlimited: buckets start afresh if a limit comes back
		clear(v.limiters)
		return
	}
	now := v.opts.Now()
	for _, l := range v.limiters {
		l.SetLimitAt(now, rate.Limit(f.RPS))
		l.SetBurstAt(now, burst(f))
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Validate returns an error for a rate outside [0, 1], rates summing over 1,
// or a negative rate limit or duration.
func (f SeedFaults) Validate() error {
	var sum float64
	for name, r := range map[string]float64{"fail_rate": f.FailRate, "malformed_rate": f.MalformedRate, "slow_rate": f.SlowRate, "reset_rate": f.ResetRate} {
		if r < 0 || r > 1 {
			return fmt.Errorf("%s %v is not between 0 and 1", name, r)
		}
		sum += r
	}
	if sum > 1 {
		return fmt.Errorf("fault rates add up to %v, more than 1", sum)
	}
	if f.RPS < 0 || f.Burst < 0 || f.Latency < 0 || f.LatencyJitter < 0 || f.SlowDelay < 0 {
		return errors.New("rps, burst and durations must not be negative")
	}
	return nil
}

// faultsJSON is Faults on the wire: durations as strings ("250ms"); a field
// left out keeps its value on UnmarshalJSON.
type faultsJSON struct {
	RPS           *float64 `json:"rps,omitempty"`
	Burst         *int     `json:"burst,omitempty"`
	Latency       *string  `json:"latency,omitempty"`
	LatencyJitter *string  `json:"latency_jitter,omitempty"`
	FailRate      *float64 `json:"fail_rate,omitempty"`
	MalformedRate *float64 `json:"malformed_rate,omitempty"`
	SlowRate      *float64 `json:"slow_rate,omitempty"`
	SlowDelay     *string  `json:"slow_delay,omitempty"`
	ResetRate     *float64 `json:"reset_rate,omitempty"`
}

// MarshalJSON writes every field, durations as strings.
func (f SeedFaults) MarshalJSON() ([]byte, error) {
	return json.Marshal(faultsJSON{
		RPS: &f.RPS, Burst: &f.Burst,
		Latency: ptr(f.Latency.String()), LatencyJitter: ptr(f.LatencyJitter.String()),
		FailRate: &f.FailRate, MalformedRate: &f.MalformedRate,
		SlowRate: &f.SlowRate, SlowDelay: ptr(f.SlowDelay.String()), ResetRate: &f.ResetRate,
	})
}

// UnmarshalJSON sets the fields present in b and keeps the others; unknown
// fields are an error (a typo in a chaos script should be loud).
func (f *SeedFaults) UnmarshalJSON(b []byte) error {
	var j faultsJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("faults: %w", err)
	}
	n := *f
	setF := func(dst *float64, src *float64) {
		if src != nil {
			*dst = *src
		}
	}
	setF(&n.RPS, j.RPS)
	setF(&n.FailRate, j.FailRate)
	setF(&n.MalformedRate, j.MalformedRate)
	setF(&n.SlowRate, j.SlowRate)
	setF(&n.ResetRate, j.ResetRate)
	if j.Burst != nil {
		n.Burst = *j.Burst
	}
	for _, d := range []struct {
		dst  *time.Duration
		src  *string
		name string
	}{{&n.Latency, j.Latency, "latency"}, {&n.LatencyJitter, j.LatencyJitter, "latency_jitter"}, {&n.SlowDelay, j.SlowDelay, "slow_delay"}} {
		if d.src == nil {
			continue
		}
		v, err := time.ParseDuration(*d.src)
		if err != nil {
			return fmt.Errorf("faults: %s: %w", d.name, err)
		}
		*d.dst = v
	}
	*f = n
	return nil
}
