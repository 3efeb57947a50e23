package enrichtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

const maxRequestBytes = 1 << 20

func (v *Seed) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/profile", v.api("profile", v.profile))
	mux.HandleFunc("GET /v1/email", v.api("email", v.email))
	mux.HandleFunc("GET /v1/phone", v.api("phone", v.phone))
	mux.HandleFunc("POST /v1/bulk", v.api("bulk", v.bulk))
	mux.HandleFunc("GET /_fake/ledger", v.serveLedger)
	mux.HandleFunc("GET /_fake/stats", v.serveStats)
	mux.HandleFunc("GET /_fake/faults", v.serveFaults)
	mux.HandleFunc("POST /_fake/faults", v.postFaults)
	return mux
}

// answer is what an endpoint makes of a request that passed auth, the rate
// limit and the idempotency check.
type answer struct {
	status  int
	body    []byte
	credits int64
	inputs  []string // for the ledger
	lookups int64
}

// work reports whether the answer is the result of a lookup: charged,
// recorded in the ledger, replayed for its Idempotency-Key.
func (a answer) work() bool { return a.status/100 == 2 || a.status == http.StatusNotFound }

func errorAnswer(status int, code, msg string) answer {
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": msg}})
	return answer{status: status, body: body}
}

func jsonAnswer(status int, v any) answer {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err) // our own records always marshal
	}
	return answer{status: status, body: body}
}

type fault int

const (
	faultNone fault = iota
	faultFail
	faultReset
	faultMalformed
	faultSlow
)

type idemScope struct{ apiKey, key string }

type idemEntry struct {
	fingerprint string
	inflight    bool
	status      int
	body        []byte
	expires     time.Time
}

// api wraps an endpoint with what every vendor call goes through, and counts it.
func (v *Seed) api(endpoint string, handle func(r *http.Request, body []byte) answer) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		status := v.serveAPI(endpoint, handle, w, r)
		v.mu.Lock()
		v.stats.Requests++
		v.stats.ByEndpoint[endpoint]++
		if status != 0 {
			v.stats.ByStatus[status]++
		}
		v.mu.Unlock()
	}
}

// serveAPI answers one call and returns the status written (0: connection reset).
// Order: auth, body, rate limit, injected 503, idempotency, work and charge,
// latency, faults that come after the work (reset, slow, malformed).
func (v *Seed) serveAPI(endpoint string, handle func(*http.Request, []byte) answer, w http.ResponseWriter, r *http.Request) int {
	key, ok := bearer(r.Header.Get("Authorization"))
	switch {
	case !ok || (!v.keys[key] && !v.noPlan[key]):
		return writeAnswer(w, errorAnswer(http.StatusUnauthorized, "unauthorized", "missing or invalid API key"))
	case v.noPlan[key]:
		return writeAnswer(w, errorAnswer(http.StatusForbidden, "plan_required", "your plan has no API access: upgrade to PLUS"))
	}
	var body []byte
	if r.Method == http.MethodPost {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
		switch {
		case err != nil:
			return writeAnswer(w, errorAnswer(http.StatusBadRequest, "invalid_request", "cannot read the body"))
		case len(b) > maxRequestBytes:
			return writeAnswer(w, errorAnswer(http.StatusRequestEntityTooLarge, "payload_too_large", "body over 1 MiB"))
		}
		body = b
	}
	h := w.Header()
	now := v.opts.Now()
	idemKey := ""
	if !v.opts.IgnoreIdempotency {
		idemKey = r.Header.Get("Idempotency-Key")
	}
	scope := idemScope{key, idemKey}
	fp := fingerprint(r, body)

	v.mu.Lock()
	f := v.faults
	if lim := v.limiter(key, f); lim != nil {
		allowed := lim.AllowN(now, 1)
		tokens := lim.TokensAt(now)
		h.Set("X-RateLimit-Limit", strconv.FormatInt(int64(math.Ceil(f.RPS)), 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(int64(math.Max(0, math.Floor(tokens))), 10))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(int64(math.Ceil(math.Max(0, float64(burst(f))-tokens)/f.RPS)), 10))
		if !allowed {
			wait := max(1, int64(math.Ceil((1-tokens)/f.RPS)))
			remaining := v.opts.StartCredits - v.charged
			v.mu.Unlock()
			h.Set("Retry-After", strconv.FormatInt(wait, 10))
			v.setCredits(h, 0, remaining)
			return writeAnswer(w, errorAnswer(http.StatusTooManyRequests, "rate_limited", "rate limit exceeded"))
		}
	}
	flt := v.drawFault(f)
	delay := v.drawLatency(f)
	if flt == faultFail {
		withRetryAfter := v.rng.IntN(2) == 0
		remaining := v.opts.StartCredits - v.charged
		v.mu.Unlock()
		if withRetryAfter {
			h.Set("Retry-After", "1")
		}
		v.setCredits(h, 0, remaining)
		return writeAnswer(w, errorAnswer(http.StatusServiceUnavailable, "unavailable", "service unavailable, try again later"))
	}
	var (
		conflict *answer
		replay   *idemEntry
		entry    *idemEntry
	)
	if idemKey != "" {
		v.purgeIdem(now)
		if e, ok := v.idem[scope]; ok && now.Before(e.expires) {
			switch {
			case e.fingerprint != fp:
				conflict = ptr(errorAnswer(http.StatusUnprocessableEntity, "idempotency_mismatch", "this Idempotency-Key was used for another request"))
			case e.inflight:
				conflict = ptr(errorAnswer(http.StatusConflict, "idempotency_in_progress", "a request with this Idempotency-Key is in progress"))
			default:
				replay = e
				v.stats.Replays++
			}
		} else {
			entry = &idemEntry{fingerprint: fp, inflight: true, expires: now.Add(SeedIdempotencyTTL)}
			v.idem[scope] = entry
		}
	}
	v.mu.Unlock()

	var ans answer
	switch {
	case conflict != nil:
		ans = *conflict
	case replay != nil:
		ans = answer{status: replay.status, body: replay.body}
		if !v.opts.NoReplayHeader {
			h.Set("Idempotent-Replayed", "true")
		}
	default:
		ans = handle(r, body)
	}
	v.mu.Lock()
	if conflict == nil && replay == nil {
		if ans.work() {
			v.charged += ans.credits
			v.stats.Lookups += ans.lookups
			v.stats.BilledCalls++
			v.ledger = append(v.ledger, SeedLedgerEntry{Time: now, APIKey: key, Endpoint: endpoint, IdempotencyKey: idemKey,
				Inputs: ans.inputs, Status: ans.status, Credits: ans.credits})
			if entry != nil {
				entry.inflight, entry.status, entry.body = false, ans.status, ans.body
			}
		} else if entry != nil {
			delete(v.idem, scope) // only a 2xx or 404 is replayed
		}
	}
	charged := int64(0)
	if conflict == nil && replay == nil && ans.work() {
		charged = ans.credits
		if v.opts.AbsurdChargeRate > 0 && v.rng.Float64() < v.opts.AbsurdChargeRate {
			charged = AbsurdCharges[v.stats.AbsurdCharges%int64(len(AbsurdCharges))]
			v.stats.AbsurdCharges++
		}
	}
	remaining := v.opts.StartCredits - v.charged
	v.mu.Unlock()

	v.setCredits(h, charged, remaining)
	sleep(r.Context(), delay)
	if ans.work() {
		switch flt {
		case faultReset:
			v.count(&v.stats.Resets)
			reset(w)
			return 0
		case faultSlow:
			v.count(&v.stats.Slow)
			sleep(r.Context(), f.SlowDelay)
		case faultMalformed:
			if ans.status == http.StatusOK {
				v.count(&v.stats.Malformed)
				ans.body = append(ans.body[:len(ans.body)/2:len(ans.body)/2], `,"trunc`...)
			}
		}
	}
	return writeAnswer(w, ans)
}

// limiter is key's token bucket, nil when unlimited. Called with v.mu held.
func (v *Seed) limiter(key string, f SeedFaults) *rate.Limiter {
	if f.RPS <= 0 {
		return nil
	}
	l, ok := v.limiters[key]
	if !ok {
		l = rate.NewLimiter(rate.Limit(f.RPS), burst(f))
		v.limiters[key] = l
	}
	return l
}

// drawFault picks at most one fault. Called with v.mu held.
func (v *Seed) drawFault(f SeedFaults) fault {
	u := v.rng.Float64()
	for _, c := range []struct {
		rate  float64
		fault fault
	}{{f.FailRate, faultFail}, {f.ResetRate, faultReset}, {f.MalformedRate, faultMalformed}, {f.SlowRate, faultSlow}} {
		if u < c.rate {
			return c.fault
		}
		u -= c.rate
	}
	return faultNone
}

// drawLatency is Latency plus or minus jitter. Called with v.mu held.
func (v *Seed) drawLatency(f SeedFaults) time.Duration {
	d := f.Latency
	if f.LatencyJitter > 0 {
		d += time.Duration((v.rng.Float64()*2 - 1) * float64(f.LatencyJitter))
	}
	return max(0, d)
}

// purgeIdem drops expired idempotency entries, at most once a minute. Called
// with v.mu held.
func (v *Seed) purgeIdem(now time.Time) {
	if now.Sub(v.lastPurge) < time.Minute {
		return
	}
	v.lastPurge = now
	for k, e := range v.idem {
		if !now.Before(e.expires) && !e.inflight {
			delete(v.idem, k)
		}
	}
}

func (v *Seed) count(n *int64) {
	v.mu.Lock()
	*n++
	v.mu.Unlock()
}

func (v *Seed) setCredits(h http.Header, charged, remaining int64) {
	if v.opts.OmitCreditHeaders {
		return
	}
	h.Set("X-Credits-Charged", strconv.FormatInt(charged, 10))
	h.Set("X-Credits-Remaining", strconv.FormatInt(remaining, 10))
}

func writeAnswer(w http.ResponseWriter, a answer) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
	return a.status
}

func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// fingerprint identifies a request, to tell a replay from a reused key.
func fingerprint(r *http.Request, body []byte) string {
	s := sha256.Sum256(body)
	return r.Method + " " + r.URL.Path + "?" + r.URL.Query().Encode() + " " + hex.EncodeToString(s[:])
}

// apiError is a bad input: a 4xx for a single lookup, a row's error in bulk.
type apiError struct {
	status    int
	code, msg string
}
