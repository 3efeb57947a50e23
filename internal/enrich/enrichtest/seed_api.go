package enrichtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
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

// checkInputs validates a profile lookup's inputs (query parameters or a
// bulk row).
func (v *Seed) checkInputs(in map[string]string) (enrich.ProfileQuery, *apiError) {
	q := enrich.ProfileQuery{
		ProfileURL: strings.TrimSpace(in["profile_url"]),
		Email:      strings.TrimSpace(in["email"]),
		Name:       strings.TrimSpace(in["name"]),
		Company:    strings.TrimSpace(in["company"]),
		Domain:     strings.TrimSpace(in["domain"]),
	}
	if q.Name != "" && q.Company != "" && q.Domain != "" {
		return q, &apiError{http.StatusBadRequest, "invalid_request", "give company or domain, not both"}
	}
	if (q.Name == "") != (q.Company == "" && q.Domain == "") && q.ProfileURL == "" && q.Email == "" {
		return q, &apiError{http.StatusBadRequest, "invalid_request", "name goes with company or domain"}
	}
	if q.Kind() == "" {
		return q, &apiError{http.StatusBadRequest, "invalid_request", "give exactly one of profile_url, email, name with company, or name with domain"}
	}
	if v.rejected(q.ProfileURL, q.Email, q.Name, q.Company, q.Domain) {
		return q, &apiError{http.StatusBadRequest, "invalid_request", "input rejected"}
	}
	if q.ProfileURL != "" && !validProfileURL(q.ProfileURL) {
		return q, &apiError{http.StatusUnprocessableEntity, "invalid_profile_url", "profile_url is not a profile URL"}
	}
	if local, domain, ok := strings.Cut(q.Email, "@"); q.Email != "" && (!ok || local == "" || !strings.Contains(domain, ".")) {
		return q, &apiError{http.StatusUnprocessableEntity, "invalid_email", "email is not an email address"}
	}
	if q.Domain != "" && !bareDomain(q.Domain) {
		return q, &apiError{http.StatusUnprocessableEntity, "invalid_domain", "domain is not a bare host name such as acme.com"}
	}
	return q, nil
}

// bareDomain is the contract's domain: lower-case ASCII letters, digits,
// hyphens and dots, with a dot, no "www.", no scheme, port or path.
func bareDomain(d string) bool {
	if !strings.Contains(d, ".") || strings.HasPrefix(d, "www.") || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") {
		return false
	}
	for _, r := range d {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '.' {
			return false
		}
	}
	return true
}

func (v *Seed) rejected(inputs ...string) bool {
	if v.opts.RejectSubstring == "" {
		return false
	}
	for _, s := range inputs {
		if strings.Contains(s, v.opts.RejectSubstring) {
			return true
		}
	}
	return false
}

func validProfileURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && strings.Trim(u.Path, "/") != ""
}

// checkProfileURL validates the input of /v1/email and /v1/phone.
func (v *Seed) checkProfileURL(s string) *apiError {
	switch {
	case s == "":
		return &apiError{http.StatusBadRequest, "invalid_request", "profile_url is required"}
	case v.rejected(s):
		return &apiError{http.StatusBadRequest, "invalid_request", "input rejected"}
	case !validProfileURL(s):
		return &apiError{http.StatusUnprocessableEntity, "invalid_profile_url", "profile_url is not a profile URL"}
	}
	return nil
}

func inputOf(q enrich.ProfileQuery) string {
	switch q.Kind() {
	case domain.InputProfileURL:
		return "profile_url=" + q.ProfileURL
	case domain.InputEmail:
		return "email=" + q.Email
	case domain.InputNameDomain:
		return "name=" + q.Name + "&domain=" + q.Domain
	}
	return "name=" + q.Name + "&company=" + q.Company
}

// profileCost is what a profile lookup of q costs (found: a match).
func (p SeedPrices) profileCost(q enrich.ProfileQuery, found bool) int64 {
	switch byURL := q.Kind() == domain.InputProfileURL; {
	case byURL && found:
		return p.ProfileByURL
	case byURL:
		return p.ProfileByURLNoMatch
	case found:
		return p.ProfileBySearch
	}
	return p.ProfileBySearchNoMatch
}

// GET /v1/profile?profile_url= | ?email= | ?name=&company= | ?name=&domain=
func (v *Seed) profile(r *http.Request, _ []byte) answer {
	p := r.URL.Query()
	q, aerr := v.checkInputs(map[string]string{
		"profile_url": p.Get("profile_url"), "email": p.Get("email"), "name": p.Get("name"), "company": p.Get("company"),
		"domain": p.Get("domain"),
	})
	if aerr != nil {
		return errorAnswer(aerr.status, aerr.code, aerr.msg)
	}
	var a answer
	hit := v.ProfileHit(q)
	switch {
	case hit:
		a = jsonAnswer(http.StatusOK, makeProfile(q))
	case v.opts.NoMatchAs200:
		a = jsonAnswer(http.StatusOK, map[string]any{"status": "no_match", "name": nil})
	default:
		a = errorAnswer(http.StatusNotFound, "not_found", "no match")
	}
	a.credits, a.inputs, a.lookups = v.opts.Prices.profileCost(q, hit), []string{inputOf(q)}, 1
	return a
}

// GET /v1/email?profile_url=
func (v *Seed) email(r *http.Request, _ []byte) answer {
	u := strings.TrimSpace(r.URL.Query().Get("profile_url"))
	if aerr := v.checkProfileURL(u); aerr != nil {
		return errorAnswer(aerr.status, aerr.code, aerr.msg)
	}
	var a answer
	switch {
	case v.EmailHit(u):
		e := makeEmail(u)
		a = jsonAnswer(http.StatusOK, e)
		a.credits = v.opts.Prices.emailCost(&e)
	case v.opts.NoMatchAs200:
		a = jsonAnswer(http.StatusOK, map[string]any{"email": nil})
		a.credits = v.opts.Prices.emailCost(nil)
	default:
		a = errorAnswer(http.StatusNotFound, "not_found", "no email found")
		a.credits = v.opts.Prices.emailCost(nil)
	}
	a.inputs, a.lookups = []string{"profile_url=" + u}, 1
	return a
}

// GET /v1/phone?profile_url=
func (v *Seed) phone(r *http.Request, _ []byte) answer {
	u := strings.TrimSpace(r.URL.Query().Get("profile_url"))
	if aerr := v.checkProfileURL(u); aerr != nil {
		return errorAnswer(aerr.status, aerr.code, aerr.msg)
	}
	var a answer
	switch {
	case v.PhoneHit(u):
		p := makePhones(u)
		a = jsonAnswer(http.StatusOK, map[string]any{"phones": p})
		a.credits = v.opts.Prices.phoneCost(p)
	case v.opts.NoMatchAs200:
		a = jsonAnswer(http.StatusOK, map[string]any{"phones": []phoneRecord{}})
		a.credits = v.opts.Prices.phoneCost(nil)
	default:
		a = errorAnswer(http.StatusNotFound, "not_found", "no phone found")
		a.credits = v.opts.Prices.phoneCost(nil)
	}
	a.inputs, a.lookups = []string{"profile_url=" + u}, 1
	return a
}

// bulkAnswerJSON is a /v1/bulk answer; bulkResultJSON one of its results.
// Structs rather than maps: the fake vendor shares the benchmark's CPUs with
// what it measures. A field that is a nil pointer is left out; a pointer to
// a nil pointer is sent as null (no match).
type bulkAnswerJSON struct {
	Results []bulkResultJSON `json:"results"`
}

type bulkResultJSON struct {
	Index   int             `json:"index"`
	Error   *errorJSON      `json:"error,omitempty"`
	Profile **profileRecord `json:"profile,omitempty"`
	Email   **emailRecord   `json:"email,omitempty"`
	Phones  *[]phoneRecord  `json:"phones,omitempty"`
}

type errorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// POST /v1/bulk {"rows": [...], "include": ["email", "phone"]}: results in
// shuffled order, matched by index; a bad row gets its own error.
func (v *Seed) bulk(_ *http.Request, body []byte) answer {
	var req struct {
		Rows    *[]json.RawMessage `json:"rows"`
		Include []string           `json:"include"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return errorAnswer(http.StatusBadRequest, "invalid_request", "body is not a JSON object with rows")
	}
	if req.Rows == nil || len(*req.Rows) == 0 {
		return errorAnswer(http.StatusBadRequest, "invalid_request", "rows is required")
	}
	rows := *req.Rows
	if len(rows) > SeedMaxBulkRows {
		return errorAnswer(http.StatusBadRequest, "too_many_rows", "at most 100 rows per call")
	}
	var wantEmail, wantPhone bool
	for _, s := range req.Include {
		switch s {
		case "email":
			wantEmail = true
		case "phone", "phones":
			wantPhone = true
		case "profile":
		default:
			return errorAnswer(http.StatusBadRequest, "invalid_request", "include takes email and phone")
		}
	}
	var a answer
	a.status = http.StatusOK
	results := make([]bulkResultJSON, len(rows))
	for i, raw := range rows {
		res := &results[i]
		res.Index = i
		var in map[string]string
		if err := json.Unmarshal(raw, &in); err != nil || in == nil {
			res.Error = &errorJSON{Code: "invalid_request", Message: "a row is an object of strings"}
			continue
		}
		q, aerr := v.checkInputs(in)
		if aerr != nil {
			res.Error = &errorJSON{Code: aerr.code, Message: aerr.msg}
			continue
		}
		hit := v.ProfileHit(q)
		a.credits += v.opts.Prices.profileCost(q, hit)
		a.lookups++
		a.inputs = append(a.inputs, inputOf(q))
		if !hit {
			res.Profile = new(*profileRecord) // "profile": null
			continue
		}
		rec := makeProfile(q)
		res.Profile = ptr(&rec)
		if wantEmail {
			a.lookups++
			res.Email = new(*emailRecord) // "email": null
			var found *emailRecord
			if v.EmailHit(rec.ProfileURL) {
				e := makeEmail(rec.ProfileURL)
				res.Email, found = ptr(&e), &e
			}
			a.credits += v.opts.Prices.emailCost(found)
		}
		if wantPhone {
			a.lookups++
			res.Phones = ptr([]phoneRecord{})
			if v.PhoneHit(rec.ProfileURL) {
				res.Phones = ptr(makePhones(rec.ProfileURL))
			}
			a.credits += v.opts.Prices.phoneCost(*res.Phones)
		}
	}
	v.mu.Lock()
	v.rng.Shuffle(len(results), func(i, j int) { results[i], results[j] = results[j], results[i] })
	v.mu.Unlock()
	out := jsonAnswer(http.StatusOK, bulkAnswerJSON{Results: results})
	a.body = out.body
	return a
}
