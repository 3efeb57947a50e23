package enrichtest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/enrichq/enrichq/internal/enrich"
)

// The Hunter fake's wire: what it serves, as the vendor's public API v2 does
// (the project's vendor-hunter.md): GET /v2/email-finder, GET
// /v2/email-verifier, GET /v2/account; the key as the api_key parameter or
// the X-API-KEY header.

// HunterOptions configure a [Hunter] fake. NewHunter uses them as given (a
// zero hit rate means nobody is found): start from [DefaultHunterOptions].
type HunterOptions struct {
	// APIKeys are the accepted keys. Empty: {"test-key"}.
	APIKeys []string
	// Searches and Verifications are each key's quotas this month
	// (GET /v2/account's "available"); at a quota's end its endpoint answers
	// 429 (usage limit reached) and bills nothing.
	Searches, Verifications int64
	// PerSecond limits each key's calls to the finder and to the verifier in
	// each one-second window (the vendor's 15/s and 10/s); past it, 403
	// (rate limit reached). 0: unlimited. StormCalls answers the first
	// StormCalls calls of each key 403 whatever the rate: a storm.
	PerSecond  int
	StormCalls int
	// Seed seeds who is found, every verdict and the faults.
	Seed int64

	// The truth. Knows, when set, decides whether the finder finds a
	// person's email; else the lookup's domain's TLD (Lookup.Segment) is
	// drawn against SegmentHitRates when present, else against HitRate.
	// Deterministic: the same lookup and seed always give the same answer.
	Knows           func(Lookup) bool
	SegmentHitRates map[string]float64
	HitRate         float64
	// Verdicts: a domain is a catch-all (every address accept_all) with
	// CatchAllRate; webmail and disposable domains are as listed; of the
	// other addresses, InvalidRate are invalid, UnknownRate unknown, the rest
	// valid. By hash of the domain or the address: an address found by any
	// vendor gets the same verdict.
	CatchAllRate, InvalidRate, UnknownRate float64
	WebmailDomains, DisposableDomains      []string
	// Suppressed says a person asked the vendor to stop processing their
	// data: every call about them answers 451 (finder: by name and domain;
	// verifier: by address). SuppressedRate draws them by hash when nil.
	Suppressed     func(Lookup) bool
	SuppressedRate float64
	// PendingFirst: the first verification of each address answers 202
	// (still checking, not billed); the next answers.
	PendingFirst bool
	// NoAnswerRate is the share of verifications answered 222 (the mail
	// server did not answer; not billed).
	NoAnswerRate float64
	// MissAs404 answers a miss of the finder 404 (free) instead of a 200
	// with a null email.
	MissAs404 bool
	// WrongDomainRate is the share of the lookups it does not know that
	// the finder answers anyway, billed, with a namesake's address at
	// another company (an old employer's domain): an email finder that
	// returns the best it has rather than nothing.
	WrongDomainRate float64
	// FailRate: calls answered 503 before any work. ResetRate: calls whose
	// work is done and billed, then the connection closed without an answer.
	FailRate, ResetRate float64
	// Now tells the time (rate windows, verification dates). Default time.Now.
	Now func() time.Time
}

// DefaultHunterOptions: key "test-key" with 1,000,000 searches and
// verifications, no rate limit, seed 1, 60% of lookups found; 10% of
// domains catch-alls, 10% of addresses invalid, 5% unknown; gmail.com,
// yahoo.com and outlook.com webmail, mailinator.com disposable.
func DefaultHunterOptions() HunterOptions {
	return HunterOptions{
		APIKeys:           []string{"test-key"},
		Searches:          1_000_000,
		Verifications:     1_000_000,
		Seed:              1,
		HitRate:           0.6,
		CatchAllRate:      0.1,
		InvalidRate:       0.1,
		UnknownRate:       0.05,
		WebmailDomains:    []string{"gmail.com", "yahoo.com", "outlook.com"},
		DisposableDomains: []string{"mailinator.com"},
		Now:               time.Now,
	}
}

// HunterUsage is one key's counters, as GET /v2/account tells them: the
// searches and verifications billed this month.
type HunterUsage struct {
	Searches      int64 `json:"searches"`
	Verifications int64 `json:"verifications"`
}

// HunterStats count what the fake was asked and how it answered.
type HunterStats struct {
	Requests int64            `json:"requests"`
	ByStatus map[int]int64    `json:"by_status"`
	Resets   int64            `json:"resets"`
	Found    int64            `json:"found"`    // emails found (billed searches), wrong ones too
	Wrong    int64            `json:"wrong"`    // of them, a namesake's address at another domain
	Verdicts map[string]int64 `json:"verdicts"` // verifications answered, by status
}

// Hunter is the fake of the Hunter-shaped vendor. It is safe for concurrent use.
type Hunter struct {
	opts HunterOptions
	keys map[string]bool
	mux  *http.ServeMux

	mu      sync.Mutex
	rng     *rand.Rand
	windows map[windowKey]int
	calls   map[string]int // per key, for StormCalls
	used    map[string]*HunterUsage
	checked map[string]bool // addresses asked once (PendingFirst)
	asked   map[string]int  // per person or address key: calls about them (451 persons too)
	stats   HunterStats
}

// NewHunter returns a fake configured by opts.
func NewHunter(opts HunterOptions) *Hunter {
	if len(opts.APIKeys) == 0 {
		opts.APIKeys = []string{"test-key"}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	h := &Hunter{opts: opts, keys: map[string]bool{}, mux: http.NewServeMux(),
		rng: rand.New(rand.NewPCG(uint64(opts.Seed), 0x68756e746572)), windows: map[windowKey]int{}, calls: map[string]int{},
		used: map[string]*HunterUsage{}, checked: map[string]bool{}, asked: map[string]int{},
		stats: HunterStats{ByStatus: map[int]int64{}, Verdicts: map[string]int64{}}}
	for _, k := range opts.APIKeys {
		h.keys[k] = true
		h.used[k] = &HunterUsage{}
	}
	h.mux.HandleFunc("/v2/email-finder", h.api("finder", h.finder))
	h.mux.HandleFunc("/v2/email-verifier", h.api("verifier", h.verifier))
	h.mux.HandleFunc("/v2/account", h.api("account", h.account))
	return h
}

// ServeHTTP serves the vendor's API.
func (h *Hunter) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Usage is key's counters (what GET /v2/account says it used).
func (h *Hunter) Usage(key string) HunterUsage {
	h.mu.Lock()
	defer h.mu.Unlock()
	if u := h.used[key]; u != nil {
		return *u
	}
	return HunterUsage{}
}

// Asked is how many calls were about the person of l (the finder) or the
// address email (the verifier, l.Email set): a suppressed person's 451s
// count too.
func (h *Hunter) Asked(l Lookup) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.asked[l.key()]
}

// Stats are the fake's counters.
func (h *Hunter) Stats() HunterStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.stats
	s.ByStatus, s.Verdicts = map[int]int64{}, map[string]int64{}
	for k, v := range h.stats.ByStatus {
		s.ByStatus[k] = v
	}
	for k, v := range h.stats.Verdicts {
		s.Verdicts[k] = v
	}
	return s
}

// Finds reports whether the finder finds the email of l (Name, Company as
// the domain), and the address it answers.
func (h *Hunter) Finds(l Lookup) (string, bool) {
	if !h.knows(l) {
		return "", false
	}
	return addressOf(l.Name, hostOf(l.Company)), true
}

// Verdict is the status the verifier gives addr.
func (h *Hunter) Verdict(addr string) string {
	addr = strings.ToLower(strings.TrimSpace(addr))
	dom := emailDomain(addr)
	seed := fmt.Sprint(h.opts.Seed)
	switch {
	case slices.Contains(h.opts.WebmailDomains, dom):
		return "webmail"
	case slices.Contains(h.opts.DisposableDomains, dom):
		return "disposable"
	case unit(hash(seed, "catchall", dom)) < h.opts.CatchAllRate:
		return "accept_all"
	}
	switch u := unit(hash(seed, "verdict", addr)); {
	case u < h.opts.InvalidRate:
		return "invalid"
	case u < h.opts.InvalidRate+h.opts.UnknownRate:
		return "unknown"
	}
	return "valid"
}

func (h *Hunter) knows(l Lookup) bool {
	if h.opts.Knows != nil {
		return h.opts.Knows(l)
	}
	rate := h.opts.HitRate
	if r, ok := h.opts.SegmentHitRates[l.Segment()]; ok {
		rate = r
	}
	return unit(hash(fmt.Sprint(h.opts.Seed), "hunter-knows", l.key())) < rate
}

func (h *Hunter) suppressed(l Lookup) bool {
	if h.opts.Suppressed != nil {
		return h.opts.Suppressed(l)
	}
	return unit(hash(fmt.Sprint(h.opts.Seed), "hunter-451", l.key())) < h.opts.SuppressedRate
}

// addressOf is the address the fake gives a person: first.last@domain.
func addressOf(name, domain string) string {
	f := strings.Fields(strings.ToLower(name))
	if len(f) == 0 || domain == "" {
		return ""
	}
	local := f[0]
	if len(f) > 1 {
		local += "." + f[len(f)-1]
	}
	return local + "@" + domain
}

// hunterReply is what a handler answers, and what it bills once the work
// is done (a reset after it still bills).
type hunterReply struct {
	status int
	body   any
	bill   func(*HunterUsage) // what the answer bills, applied when it is worked
}

func hunterError(status int, id, details string) hunterReply {
	return hunterReply{status: status, body: map[string]any{"errors": []map[string]any{{"id": id, "code": status, "details": details}}}}
}

// api wraps an endpoint with what every call goes through, in order:
// method, auth, the storm and the rate window, an injected 503, the work
// (which checks the quota and the input), billing, then an injected reset.
func (h *Hunter) api(endpoint string, handle func(r *http.Request, key string) hunterReply) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		status := h.serve(endpoint, handle, w, r)
		h.mu.Lock()
		h.stats.Requests++
		if status != 0 {
			h.stats.ByStatus[status]++
		}
		h.mu.Unlock()
	}
}

func (h *Hunter) serve(endpoint string, handle func(*http.Request, string) hunterReply, w http.ResponseWriter, r *http.Request) int {
	if r.Method != http.MethodGet {
		return h.write(w, hunterError(http.StatusBadRequest, "wrong_params", "use GET"))
	}
	key := r.URL.Query().Get("api_key")
	if key == "" {
		key = r.Header.Get("X-API-KEY")
	}
	if !h.keys[key] {
		return h.write(w, hunterError(http.StatusUnauthorized, "no_valid_api_key", "No user found for the API key supplied"))
	}
	h.mu.Lock()
	if endpoint != "account" {
		h.calls[key]++
		if h.calls[key] <= h.opts.StormCalls {
			h.mu.Unlock()
			return h.write(w, hunterError(http.StatusForbidden, "too_many_requests", "You have reached the rate limit"))
		}
		if h.opts.PerSecond > 0 {
			wk := windowKey{key, endpoint, h.opts.Now().Unix()}
			h.windows[wk]++
			if h.windows[wk] > h.opts.PerSecond {
				h.mu.Unlock()
				return h.write(w, hunterError(http.StatusForbidden, "too_many_requests", "You have reached the rate limit"))
			}
		}
	}
	fail, rst := h.rng.Float64() < h.opts.FailRate, h.rng.Float64() < h.opts.ResetRate
	h.mu.Unlock()
	if fail && endpoint != "account" {
		return h.write(w, hunterError(http.StatusServiceUnavailable, "service_unavailable", "try again later"))
	}
	rep := handle(r, key)
	if rep.bill != nil {
		h.mu.Lock()
		rep.bill(h.used[key])
		h.mu.Unlock()
	}
	if rst && endpoint != "account" && rep.status == http.StatusOK {
		h.mu.Lock()
		h.stats.Resets++
		h.mu.Unlock()
		reset(w)
		return 0
	}
	return h.write(w, rep)
}

func (h *Hunter) write(w http.ResponseWriter, rep hunterReply) int {
	b, _ := json.Marshal(rep.body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	_, _ = w.Write(b)
	return rep.status
}

// finder is GET /v2/email-finder: domain (or company) and first_name with
// last_name, or full_name. 200 with the email (one search billed), a miss
// free (200 with a null email, or 404), 429 at the searches' quota, 451 for a
// suppressed person.
func (h *Hunter) finder(r *http.Request, key string) hunterReply {
	q := r.URL.Query()
	name := strings.TrimSpace(q.Get("full_name"))
	if name == "" {
		name = strings.TrimSpace(q.Get("first_name") + " " + q.Get("last_name"))
	}
	company := q.Get("domain")
	if company == "" {
		company = q.Get("company")
	}
	if name == "" || q.Get("first_name") != "" && q.Get("last_name") == "" || strings.TrimSpace(company) == "" {
		return hunterError(http.StatusBadRequest, "wrong_params", "You are missing the domain or the name parameters")
	}
	l := Lookup{Name: name, Company: company}
	h.mu.Lock()
	h.asked[l.key()]++
	spent := h.used[key].Searches >= h.opts.Searches
	h.mu.Unlock()
	switch {
	case h.suppressed(l):
		return hunterError(http.StatusUnavailableForLegalReasons, "claimed_email", "This person asked us to stop processing their data")
	case spent:
		return hunterError(http.StatusTooManyRequests, "usage_limit_reached", "You have reached your monthly searches quota")
	}
	addr, ok := h.Finds(l)
	wrong := !ok && unit(hash(fmt.Sprint(h.opts.Seed), "hunter-wrong", l.key())) < h.opts.WrongDomainRate
	if wrong {
		company = "elsewhere-" + strconv.FormatUint(hash(fmt.Sprint(h.opts.Seed), "hunter-old-employer", l.key())%1000, 10) + ".example"
		addr, ok = addressOf(name, company), true
	}
	if !ok || addr == "" {
		if h.opts.MissAs404 {
			return hunterError(http.StatusNotFound, "email_not_found", "No email found")
		}
		return hunterReply{status: http.StatusOK, body: map[string]any{"data": map[string]any{"email": nil, "score": nil, "domain": hostOf(company)},
			"meta": map[string]any{"params": q}}}
	}
	f := strings.Fields(name)
	verdict := h.Verdict(addr)
	data := map[string]any{
		"first_name": f[0], "last_name": f[len(f)-1], "email": addr, "score": 50 + int(hash(fmt.Sprint(h.opts.Seed), "score", addr)%50),
		"domain": emailDomain(addr), "accept_all": verdict == "accept_all", "position": nil, "twitter": nil, "linkedin_url": nil,
		"phone_number": nil, "company": company, "sources": []any{},
		"verification": map[string]any{"date": h.opts.Now().UTC().Format(time.DateOnly), "status": verdict},
	}
	return hunterReply{status: http.StatusOK, body: map[string]any{"data": data, "meta": map[string]any{"params": q}},
		bill: func(u *HunterUsage) {
			u.Searches++
			h.stats.Found++
			if wrong {
				h.stats.Wrong++
			}
		}}
}

// verifier is GET /v2/email-verifier?email=: 200 with the verdict (one
// verification billed, except webmail, disposable and unknown), 202 the
// first time with PendingFirst, 222 at NoAnswerRate, 429 at the
// verifications' quota, 451 for a suppressed address.
func (h *Hunter) verifier(r *http.Request, key string) hunterReply {
	addr := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("email")))
	if !strings.Contains(addr, "@") {
		return hunterError(http.StatusBadRequest, "wrong_params", "You are missing the email parameter")
	}
	l := Lookup{Email: addr}
	h.mu.Lock()
	h.asked[l.key()]++
	spent := h.used[key].Verifications >= h.opts.Verifications
	first := !h.checked[addr]
	h.checked[addr] = true
	noAnswer := h.rng.Float64() < h.opts.NoAnswerRate
	h.mu.Unlock()
	switch {
	case h.suppressed(l):
		return hunterError(http.StatusUnavailableForLegalReasons, "claimed_email", "This person asked us to stop processing their data")
	case spent:
		return hunterError(http.StatusTooManyRequests, "usage_limit_reached", "You have reached your monthly verifications quota")
	case h.opts.PendingFirst && first:
		return hunterReply{status: http.StatusAccepted, body: map[string]any{"data": map[string]any{"email": addr, "status": nil}}}
	case noAnswer:
		return hunterReply{status: 222, body: hunterError(222, "smtp_no_answer", "The remote mail server did not answer").body}
	}
	v := h.Verdict(addr)
	result := map[string]string{"valid": "deliverable", "invalid": "undeliverable"}[v]
	if result == "" {
		result = "risky"
	}
	data := map[string]any{"status": v, "result": result, "score": 10 + int(hash(fmt.Sprint(h.opts.Seed), "vscore", addr)%90),
		"email": addr, "regexp": true, "gibberish": false, "disposable": v == "disposable", "webmail": v == "webmail",
		"mx_records": v != "invalid", "smtp_server": v != "invalid", "smtp_check": v == "valid", "accept_all": v == "accept_all", "block": false,
		"sources": []any{}}
	billed := VerifyPrice(enrich.EmailStatus(v)) > 0
	return hunterReply{status: http.StatusOK, body: map[string]any{"data": data, "meta": map[string]any{"params": map[string]string{"email": addr}}},
		bill: func(u *HunterUsage) {
			h.stats.Verdicts[v]++
			if billed {
				u.Verifications++
			}
		}}
}

// account is GET /v2/account (free): the key's counters and quotas.
func (h *Hunter) account(_ *http.Request, key string) hunterReply {
	h.mu.Lock()
	u := *h.used[key]
	h.mu.Unlock()
	now := h.opts.Now().UTC()
	reset := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	return hunterReply{status: http.StatusOK, body: map[string]any{"data": map[string]any{
		"email": "ops@example.com", "plan_name": "Fake", "plan_level": 1, "reset_date": reset.Format(time.DateOnly),
		"requests": map[string]any{
			"searches":      map[string]int64{"used": u.Searches, "available": h.opts.Searches},
			"verifications": map[string]int64{"used": u.Verifications, "available": h.opts.Verifications},
		}}}}
}
