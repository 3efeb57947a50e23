// Package enrichtest holds faithful fakes of the enrichment vendors, as
// http.Handlers for tests and benchmarks: each speaks its vendor's wire on
// its own (it does not reuse the adapter's wire code, so an adapter bug is
// not hidden by the same bug in the fake), keeps its own bill, and has a
// truth (which persons it knows) that tests can set per segment, so that two
// vendors can find different shares of one list.
package enrichtest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The PDL fake's wire: what it serves, as the vendor's public v5 person API
// does (the project's vendor-pdl.md).
const (
	PDLMaxBulk = 100
	// PDLWindow is the fixed rate window, per key and endpoint, aligned on
	// the minute (UTC).
	PDLWindow          = time.Minute
	pdlMaxRequestBytes = 1 << 20
)

// PDLOptions configure a [PDL] fake. NewPDL uses them as given (a zero hit
// rate means nobody is known): start from [DefaultPDLOptions].
type PDLOptions struct {
	// APIKeys are the accepted keys (X-Api-Key). Empty: {"test-key"}.
	APIKeys []string
	// Credits is each key's starting balance of purchased credits; a key
	// not in it starts with StartCredits. Past them a key spends its
	// OverageCredits (X-TotalLimit-Overages-Remaining); with both spent the
	// fake answers 402 to every call, and a bulk call whose matches exceed
	// what is left is refused whole (402, nothing billed).
	Credits        map[string]int64
	StartCredits   int64
	OverageCredits int64
	// RPM is the calls per key and endpoint in each fixed 60 s window; past
	// it, 429 with X-RateLimit-Reset (the window's end, RFC 3339 UTC).
	// 0: unlimited.
	RPM int
	// Latency is added to every answer past the rate limit, plus or minus a
	// uniform LatencyJitter (never below 0). Real timers.
	Latency, LatencyJitter time.Duration
	// Faults, each the share of calls (past auth and rate limit) it hits;
	// one call gets at most one.
	FailRate      float64 // 503 before any work, nothing billed
	MalformedRate float64 // work done and billed, a 200 whose body is cut short
	ResetRate     float64 // work done and billed, the connection closed without an answer
	// Seed seeds the people set (who is known, and their records), the
	// faults, the jitter and the order of bulk items.
	Seed int64

	// The truth: whether the fake knows the person of a lookup. Knows, when
	// set, decides; else the lookup's segment (Lookup.Segment) is drawn
	// against SegmentHitRates[segment] when present, else against HitRate.
	// Deterministic: the same lookup and seed always give the same answer.
	Knows           func(Lookup) bool
	SegmentHitRates map[string]float64
	HitRate         float64
	// Shares of known persons whose record has a work email, a personal
	// email, a mobile (and an office number), and no profile URL (a lookup by
	// profile URL always has one).
	WorkEmailRate, PersonalEmailRate, MobileRate, NoProfileRate float64

	// WrongPersonRate is the share of lookups by name at a company that the
	// fake does not know and answers with someone else, as the vendor does:
	// a namesake who once worked at the company asked and works elsewhere
	// now, at likelihood WrongLikelihood (the vendor's default floor is 2).
	// Billed like any match unless min_likelihood or required refuse it.
	// WrongStrongRate is the share of those the vendor is wrongly sure of:
	// scored 7, above the usual floors, so that only the record's current
	// employer tells them apart.
	WrongPersonRate float64
	WrongLikelihood int
	WrongStrongRate float64
	// FreePlan answers contact fields (work_email, personal_emails,
	// mobile_phone, phone_numbers) as true or false, as the vendor does on a
	// Free plan: the match is billed, the email and phone are not in it.
	FreePlan bool

	// InOrder answers bulk items in request order; default false: shuffled,
	// as the vendor may.
	InOrder bool
	// Now tells the time (rate windows, ledger). Default time.Now.
	Now func() time.Time
}

// DefaultPDLOptions: key "test-key" with 1,000,000 credits, unlimited rate,
// no latency, no faults, seed 1, 60% of lookups known; of those, 70% with a
// work email, 50% a personal email, 40% a mobile, 10% without a profile URL.
func DefaultPDLOptions() PDLOptions {
	return PDLOptions{
		APIKeys:           []string{"test-key"},
		StartCredits:      1_000_000,
		Seed:              1,
		HitRate:           0.6,
		WorkEmailRate:     0.7,
		PersonalEmailRate: 0.5,
		MobileRate:        0.4,
		NoProfileRate:     0.1,
		WrongLikelihood:   2,
		Now:               time.Now,
	}
}

// PDLCall is one call the fake did work for (a 200, a single 404, a bulk
// 200), whatever it billed: its ledger line.
type PDLCall struct {
	Time     time.Time `json:"time"`
	APIKey   string    `json:"-"`
	Endpoint string    `json:"endpoint"` // "enrich" or "bulk"
	Status   int       `json:"status"`
	Lookups  int       `json:"lookups"` // 1, or the bulk's requests
	Matches  int       `json:"matches"` // 200s (items)
	Credits  int64     `json:"credits"` // billed: one per match
}

// PDLStats count what the fake was asked and how it answered.
type PDLStats struct {
	Requests  int64         `json:"requests"`  // API requests
	ByStatus  map[int]int64 `json:"by_status"` // answers by HTTP status (resets are not answers)
	Resets    int64         `json:"resets"`
	Malformed int64         `json:"malformed"`
	Lookups   int64         `json:"lookups"` // lookups worked on: a bulk counts its requests
}

// PDL is the fake of the People Data Labs-shaped vendor. It is safe for
// concurrent use.
type PDL struct {
	opts PDLOptions
	keys map[string]bool
	mux  *http.ServeMux

	mu      sync.Mutex
	rng     *rand.Rand
	windows map[windowKey]int // calls per key, endpoint and window
	balance map[string]int64
	ledger  []PDLCall
	stats   PDLStats
}

type windowKey struct {
	key, endpoint string
	start         int64 // Unix seconds of the window's start
}

// NewPDL returns a fake configured by opts.
func NewPDL(opts PDLOptions) *PDL {
	if len(opts.APIKeys) == 0 {
		opts.APIKeys = []string{"test-key"}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	p := &PDL{
		opts:    opts,
		keys:    map[string]bool{},
		rng:     rand.New(rand.NewPCG(uint64(opts.Seed), 0x9d1)),
		windows: map[windowKey]int{},
		balance: map[string]int64{},
		stats:   PDLStats{ByStatus: map[int]int64{}},
	}
	for _, k := range opts.APIKeys {
		p.keys[k] = true
		p.balance[k] = opts.StartCredits
		if c, ok := opts.Credits[k]; ok {
			p.balance[k] = c
		}
	}
	p.mux = http.NewServeMux()
	p.mux.HandleFunc("/v5/person/enrich", p.api("enrich", http.MethodGet, p.enrich))
	p.mux.HandleFunc("/v5/person/bulk", p.api("bulk", http.MethodPost, p.bulk))
	return p
}

// ServeHTTP serves the vendor's API.
func (p *PDL) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.mux.ServeHTTP(w, r) }

// Knows is the fake's truth: whether it knows the person of l (a lookup of
// it is a match, unless min_likelihood or required turn it into a 404).
func (p *PDL) Knows(l Lookup) bool {
	if p.opts.Knows != nil {
		return p.opts.Knows(l)
	}
	rate := p.opts.HitRate
	if r, ok := p.opts.SegmentHitRates[l.Segment()]; ok {
		rate = r
	}
	return unit(hash(strconv.FormatInt(p.opts.Seed, 10), "known", l.key())) < rate
}

// Ledger returns a copy of the ledger, one line per call that did work.
func (p *PDL) Ledger() []PDLCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ledger)
}

// Billed is what the fake billed key so far.
func (p *PDL) Billed(key string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, c := range p.ledger {
		if c.APIKey == key {
			n += c.Credits
		}
	}
	return n
}

// TotalBilled is what the fake billed every key so far.
func (p *PDL) TotalBilled() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, c := range p.ledger {
		n += c.Credits
	}
	return n
}

// Balance is key's credits left.
func (p *PDL) Balance(key string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.balance[key]
}

// SetBalance sets key's credits left (a top-up, or running dry mid-test).
func (p *PDL) SetBalance(key string, credits int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.balance[key] = credits
}

// Stats returns a copy of the counters.
func (p *PDL) Stats() PDLStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.ByStatus = make(map[int]int64, len(p.stats.ByStatus))
	for k, n := range p.stats.ByStatus {
		s.ByStatus[k] = n
	}
	return s
}

// reply is what an endpoint answers, before the faults that come after the work.
type reply struct {
	status  int
	body    []byte
	lookups int
	matches int // billed: one credit each
	worked  bool
}

func errorReply(status int, typ, msg string) reply {
	b, _ := json.Marshal(map[string]any{"status": status, "error": map[string]string{"type": typ, "message": msg}})
	return reply{status: status, body: b}
}

type pdlFault int

const (
	pdlNoFault pdlFault = iota
	pdlFail
	pdlMalformed
	pdlReset
)

// api wraps an endpoint with what every call goes through, in order: method,
// auth, rate window, injected 503, the work (which checks the balance and
// the input), billing, latency, and the faults that come after the work.
func (p *PDL) api(endpoint, method string, handle func(r *http.Request, body []byte, balance int64) reply) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		status := p.serve(endpoint, method, handle, w, r)
		p.mu.Lock()
		p.stats.Requests++
		if status != 0 {
			p.stats.ByStatus[status]++
		}
		p.mu.Unlock()
	}
}

func (p *PDL) serve(endpoint, method string, handle func(*http.Request, []byte, int64) reply, w http.ResponseWriter, r *http.Request) int {
	if r.Method != method {
		return write(w, errorReply(http.StatusMethodNotAllowed, "method_not_allowed", "use "+method))
	}
	key := r.Header.Get("X-Api-Key")
	if !p.keys[key] {
		return write(w, errorReply(http.StatusUnauthorized, "authentication_error", "missing or invalid API key"))
	}
	var body []byte
	if r.Method == http.MethodPost {
		b, err := io.ReadAll(io.LimitReader(r.Body, pdlMaxRequestBytes+1))
		if err == nil && strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
			var zr *gzip.Reader
			if zr, err = gzip.NewReader(bytes.NewReader(b)); err == nil {
				b, err = io.ReadAll(io.LimitReader(zr, pdlMaxRequestBytes+1))
			}
		}
		if err != nil || len(b) > pdlMaxRequestBytes {
			return write(w, errorReply(http.StatusBadRequest, "invalid_request_error", "cannot read the body (gzip when so marked), or over 1 MiB"))
		}
		body = b
	}
	h := w.Header()
	now := p.opts.Now().UTC()

	p.mu.Lock()
	if p.opts.RPM > 0 {
		start := now.Truncate(PDLWindow)
		wk := windowKey{key, endpoint, start.Unix()}
		p.windows[wk]++
		n := p.windows[wk]
		// Per-window dicts, as the vendor writes them (a Python repr).
		h.Set("X-RateLimit-Limit", fmt.Sprintf("{'minute': %d, 'day': None, 'month': None}", p.opts.RPM))
		h.Set("X-RateLimit-Remaining", fmt.Sprintf("{'minute': %d, 'day': None, 'month': None}", max(0, p.opts.RPM-n)))
		h.Set("X-RateLimit-Reset", start.Add(PDLWindow).Format(time.RFC3339))
		if n > p.opts.RPM {
			p.mu.Unlock()
			return write(w, errorReply(http.StatusTooManyRequests, "rate_limit_error", "rate limit exceeded for this key and endpoint"))
		}
	}
	flt := p.drawFault()
	delay := p.drawLatency()
	balance := p.balance[key] + p.opts.OverageCredits // what the key may still spend
	p.mu.Unlock()
	if flt == pdlFail {
		return write(w, errorReply(http.StatusServiceUnavailable, "service_unavailable", "try again later"))
	}

	rep := handle(r, body, balance)
	if rep.worked {
		p.mu.Lock()
		credits := int64(rep.matches)
		p.balance[key] -= credits
		left := p.balance[key]
		p.ledger = append(p.ledger, PDLCall{Time: now, APIKey: key, Endpoint: endpoint, Status: rep.status,
			Lookups: rep.lookups, Matches: rep.matches, Credits: credits})
		p.stats.Lookups += int64(rep.lookups)
		p.mu.Unlock()
		if rep.status == http.StatusOK { // the money headers come with every 200, never with an error
			overage := p.opts.OverageCredits + min(left, 0)
			h.Set("X-Call-Credits-Spent", strconv.FormatInt(credits, 10))
			h.Set("X-Call-Credits-Type", "enrichment")
			h.Set("X-TotalLimit-Remaining", strconv.FormatInt(max(left, 0)+overage, 10))
			h.Set("X-TotalLimit-Purchased-Remaining", strconv.FormatInt(max(left, 0), 10))
			h.Set("X-TotalLimit-Overages-Remaining", strconv.FormatInt(overage, 10))
		}
	}
	sleep(r.Context(), delay)
	if rep.worked {
		switch flt {
		case pdlReset:
			p.count(&p.stats.Resets)
			reset(w)
			return 0
		case pdlMalformed:
			if rep.status == http.StatusOK {
				p.count(&p.stats.Malformed)
				rep.body = append(rep.body[:len(rep.body)/2:len(rep.body)/2], `,"trunc`...)
			}
		}
	}
	return write(w, rep)
}

// enrich is GET /v5/person/enrich: 200 with the record, 404 when nobody
// matches (free), 400 without an identity, 402 at zero credits.
func (p *PDL) enrich(r *http.Request, _ []byte, balance int64) reply {
	q := r.URL.Query()
	params := map[string]string{}
	for k := range q {
		params[k] = q.Get(k)
	}
	res := p.lookup(params)
	switch {
	case res.status == http.StatusBadRequest:
		return errorReply(http.StatusBadRequest, "invalid_request_error", res.message)
	case balance <= 0:
		return errorReply(http.StatusPaymentRequired, "payment_required", "you have no credits left on this key")
	case res.status == http.StatusNotFound:
		rep := errorReply(http.StatusNotFound, "not_found", "no records were found matching your request")
		rep.worked, rep.lookups = true, 1
		return rep
	}
	b, _ := json.Marshal(map[string]any{"status": 200, "likelihood": res.person.likelihood, "data": p.render(res.person)})
	return reply{status: http.StatusOK, body: b, lookups: 1, matches: 1, worked: true}
}

type bulkRequestJSON struct {
	Requests []struct {
		Params   map[string]any  `json:"params"`
		Metadata json.RawMessage `json:"metadata"`
	} `json:"requests"`
}

// bulk is POST /v5/person/bulk: 200 with one item per request (200 with
// data, 404, or 400 for a request without an identity), each echoing its
// metadata, in shuffled order unless InOrder; 402 for the whole call when
// the balance is zero or short of its matches.
func (p *PDL) bulk(_ *http.Request, body []byte, balance int64) reply {
	var req bulkRequestJSON
	if err := json.Unmarshal(body, &req); err != nil {
		return errorReply(http.StatusBadRequest, "invalid_request_error", "the body is not {\"requests\": [...]}")
	}
	if n := len(req.Requests); n == 0 || n > PDLMaxBulk {
		return errorReply(http.StatusBadRequest, "invalid_request_error", "requests: give 1 to 100")
	}
	if balance <= 0 {
		return errorReply(http.StatusPaymentRequired, "payment_required", "you have no credits left on this key")
	}
	items := make([]map[string]any, len(req.Requests))
	matches := 0
	for i, rq := range req.Requests {
		params := map[string]string{}
		badType := ""
		for k, v := range rq.Params {
			switch v := v.(type) {
			case string:
				params[k] = v
				if k == "min_likelihood" { // a JSON body takes it as a number, as PDL's clients send it
					badType = k
				}
			case float64:
				params[k] = strconv.FormatFloat(v, 'f', -1, 64)
			}
		}
		res := p.lookup(params)
		if badType != "" {
			res = lookupResult{status: http.StatusBadRequest, message: badType + ": give a number"}
		}
		var it map[string]any
		switch res.status {
		case http.StatusOK:
			matches++
			it = map[string]any{"status": 200, "likelihood": res.person.likelihood, "data": p.render(res.person)}
		case http.StatusNotFound:
			it = map[string]any{"status": 404, "error": map[string]string{"type": "not_found", "message": "no records were found matching your request"}}
		default:
			it = map[string]any{"status": res.status, "error": map[string]string{"type": "invalid_request_error", "message": res.message}}
		}
		if len(rq.Metadata) > 0 {
			it["metadata"] = rq.Metadata
		}
		items[i] = it
	}
	if int64(matches) > balance {
		return errorReply(http.StatusPaymentRequired, "payment_required", "this call needs more credits than the key has left")
	}
	if !p.opts.InOrder {
		p.mu.Lock()
		p.rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
		p.mu.Unlock()
	}
	b, _ := json.Marshal(items)
	return reply{status: http.StatusOK, body: b, lookups: len(items), matches: matches, worked: true}
}

// lookupResult is one lookup's outcome: 200 with the person, 404, or 400
// with a message.
type lookupResult struct {
	status  int
	person  person
	message string
}

// lookup answers one set of params: an identity (profile, email, name or
// first_name and last_name with a company), min_likelihood and required.
func (p *PDL) lookup(params map[string]string) lookupResult {
	l := Lookup{Profile: strings.TrimSpace(params["profile"]), Email: strings.TrimSpace(params["email"]),
		Name: strings.TrimSpace(params["name"]), Company: strings.TrimSpace(params["company"])}
	if l.Name == "" && params["first_name"] != "" && params["last_name"] != "" {
		l.Name = strings.TrimSpace(params["first_name"] + " " + params["last_name"])
	}
	switch {
	case l.Profile == "" && l.Email == "" && l.Name == "":
		return lookupResult{status: http.StatusBadRequest, message: "give an identity: profile, email, or a name with a company"}
	case l.Profile == "" && l.Email == "" && l.Company == "":
		return lookupResult{status: http.StatusBadRequest, message: "a name needs a company to match on"}
	}
	minLikelihood := 0
	if v := params["min_likelihood"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10 {
			return lookupResult{status: http.StatusBadRequest, message: "min_likelihood: give 1 to 10"}
		}
		minLikelihood = n
	}
	required, err := parseRequired(params["required"])
	if err != nil {
		return lookupResult{status: http.StatusBadRequest, message: "required: " + err.Error()}
	}
	var per person
	switch {
	case p.Knows(l):
		per = p.makePerson(l)
	case l.Profile == "" && l.Email == "" && unit(hash(strconv.FormatInt(p.opts.Seed, 10), "namesake", l.key())) < p.opts.WrongPersonRate:
		per = p.makeNamesake(l)
	default:
		return lookupResult{status: http.StatusNotFound}
	}
	if required != nil && !required.holds(per) {
		return lookupResult{status: http.StatusNotFound}
	}
	if per.likelihood < minLikelihood {
		return lookupResult{status: http.StatusNotFound}
	}
	return lookupResult{status: http.StatusOK, person: per}
}

// render is a record as the key's plan shows it: on a Free plan the
// contact fields are true or false, not values.
func (p *PDL) render(per person) any {
	if !p.opts.FreePlan {
		return per
	}
	b, _ := json.Marshal(per)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	m["work_email"] = per.WorkEmail != nil
	m["personal_emails"] = len(per.PersonalEmails) > 0
	m["mobile_phone"] = per.MobilePhone != nil
	m["phone_numbers"] = len(per.PhoneNumbers) > 0
	return m
}

// drawFault draws at most one fault for a call. Called with p.mu held.
func (p *PDL) drawFault() pdlFault {
	x := p.rng.Float64()
	switch o := p.opts; {
	case x < o.FailRate:
		return pdlFail
	case x < o.FailRate+o.MalformedRate:
		return pdlMalformed
	case x < o.FailRate+o.MalformedRate+o.ResetRate:
		return pdlReset
	}
	return pdlNoFault
}

// drawLatency draws a call's delay. Called with p.mu held.
func (p *PDL) drawLatency() time.Duration {
	d := p.opts.Latency
	if j := p.opts.LatencyJitter; j > 0 {
		d += time.Duration(p.rng.Int64N(int64(2*j)+1)) - j
	}
	return max(0, d)
}

func (p *PDL) count(n *int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*n++
}

func write(w http.ResponseWriter, rep reply) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	_, _ = w.Write(rep.body)
	return rep.status
}
