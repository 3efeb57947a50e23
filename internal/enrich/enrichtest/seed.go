// The seed fake is a faithful fake of the seed enrichment vendor
// (/work/shared/vendor-api.md, section 1), as an http.Handler: every endpoint,
// Bearer auth, a per-key rate limit answering 429 with Retry-After, credit
// charging with its own ledger, Idempotency-Key replays, deterministic hit
// rates and records, and injected faults (503s, malformed answers, slow
// answers, connection resets) drawn from a seeded source.
//
// Tests use it in-process (httptest.NewServer(enrichtest.NewSeed(opts))); the
// dev/fakevendor command serves it for demos and benchmarks. It speaks the
// wire format on its own (it does not reuse the client's wire code), so a
// client bug is not hidden by the same bug in the fake.
//
// Besides the vendor's API, it serves test-only control endpoints without auth:
// GET /_fake/ledger, GET /_fake/stats, GET and POST /_fake/faults.

package enrichtest

import (
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/enrichq/enrichq/internal/enrich"
)

// Charges in credits of the default price list ([DefaultSeedPrices]), sent in
// X-Credits-Charged. A bulk call costs the sum of its rows (a row with an
// error costs 0); 4xx, 429 and 503 answers cost 0.
const (
	SeedCostProfileByURL    = 1  // profile by profile_url, match or no match
	SeedCostProfileBySearch = 2  // profile by name+company, name+domain or email, match or no match
	SeedCostEmail           = 5  // email found, not verified
	SeedCostEmailVerified   = 10 // email found and verified
	SeedCostPhone           = 5  // numbers found, no mobile among them
	SeedCostPhoneMobile     = 25 // numbers found, a mobile among them
	SeedMaxBulkRows         = 100
	// SeedIdempotencyTTL is how long an Idempotency-Key's first answer is replayed.
	SeedIdempotencyTTL = 24 * time.Hour
)

// SeedPrices is the fake's price list, in credits. The contract gives only
// ranges (profile 1-2, email 5-10, phone 5-25): a vendor may price a
// no-match apart from a match, and charge for a miss.
type SeedPrices struct {
	ProfileByURL, ProfileBySearch               int64 // a match, by profile_url; by name+company, name+domain or email
	ProfileByURLNoMatch, ProfileBySearchNoMatch int64 // no match (the search was done)
	Email, EmailVerified, EmailMiss             int64 // an email found, not verified; verified; none found
	Phone, PhoneMobile, PhoneMiss               int64 // numbers found without a mobile; with one; none found
}

// DefaultSeedPrices: profile 1 by URL and 2 by search, match or not; email 5,
// 10 verified; phone 5, 25 with a mobile; misses free.
func DefaultSeedPrices() SeedPrices {
	return SeedPrices{
		ProfileByURL: SeedCostProfileByURL, ProfileBySearch: SeedCostProfileBySearch,
		ProfileByURLNoMatch: SeedCostProfileByURL, ProfileBySearchNoMatch: SeedCostProfileBySearch,
		Email: SeedCostEmail, EmailVerified: SeedCostEmailVerified,
		Phone: SeedCostPhone, PhoneMobile: SeedCostPhoneMobile,
	}
}

// SeedChargedMissPrices is a vendor that prices by outcome and charges its
// misses, inside the contract's ranges: a profile no-match 1 and a match
// 2 (however looked up), an email miss 5 and a hit 10 (verified or not), a
// phone miss 5 and a hit 25 (mobile or not).
func SeedChargedMissPrices() SeedPrices {
	return SeedPrices{
		ProfileByURL: 2, ProfileBySearch: 2, ProfileByURLNoMatch: 1, ProfileBySearchNoMatch: 1,
		Email: 10, EmailVerified: 10, EmailMiss: 5,
		Phone: 25, PhoneMobile: 25, PhoneMiss: 5,
	}
}

// SeedOptions configure a [Seed]. New uses them as given (a zero hit rate
// means nothing matches): start from [DefaultSeedOptions] and change what the
// test needs.
type SeedOptions struct {
	// APIKeys are the accepted keys. Empty: {"test-key"}.
	APIKeys []string
	// NoPlanKeys are keys that authenticate but whose plan has no API access:
	// every call is answered 403 plan_required.
	NoPlanKeys []string

	// RPS and Burst are a token bucket per API key; RPS 0 means unlimited,
	// Burst 0 (with RPS > 0) means 1. Over it: 429 with Retry-After (whole
	// seconds, at least 1). X-RateLimit-Limit (RPS rounded up),
	// X-RateLimit-Remaining (whole tokens left) and X-RateLimit-Reset
	// (seconds until the bucket is full) come with every answer while limited.
	RPS   float64
	Burst int

	// Latency is added to every answer past the rate limit, plus or minus a
	// uniform LatencyJitter (never below 0).
	Latency, LatencyJitter time.Duration

	// Hit rates, 0 to 1. Deterministic: the same normalised input always
	// matches or never does (a hash of the input against the rate), whatever
	// the seed. Email and phone hits are by profile URL.
	ProfileHitRate, EmailHitRate, PhoneHitRate float64
	// ProfileHitRates override ProfileHitRate by the query's top-level
	// domain (its domain's, else its email's: "com", "fr"), so that two
	// vendors can find different shares of one list.
	ProfileHitRates map[string]float64

	// Faults, each the share of calls (past auth and rate limit) it hits; one
	// call gets at most one fault. Their sum should not exceed 1.
	FailRate      float64       // answered 503 before any work, half of them with Retry-After: 1
	MalformedRate float64       // work done and charged, answered 200 with broken JSON
	SlowRate      float64       // work done and charged, answer delayed by SlowDelay (to exceed client timeouts)
	SlowDelay     time.Duration // default 0: a slow call is not slowed
	ResetRate     float64       // work done and charged, connection closed without an answer
	// Seed seeds faults, jitter and the order of bulk results.
	Seed int64

	// RejectSubstring: an input containing it is rejected 400
	// invalid_request (a poison row); in a bulk call, that row's error.
	RejectSubstring string
	// NoMatchAs200 answers a no-match with 200 and a body that lacks the
	// match (profile without profile_url, email null, phones empty) instead
	// of 404.
	NoMatchAs200 bool
	// AbsurdChargeRate is the share of billed answers whose
	// X-Credits-Charged no contract allows (AbsurdCharges in turn): a
	// compromised vendor, or someone in the middle. The fake's own ledger,
	// and X-Credits-Remaining, bill the true price.
	AbsurdChargeRate float64
	// OmitCreditHeaders: never send X-Credits-Charged or X-Credits-Remaining.
	OmitCreditHeaders bool
	// IgnoreIdempotency: ignore Idempotency-Key (every call is new work,
	// charged). Default false: the first 2xx/404 answer for a key (per API
	// key) is replayed for 24 h and charged nothing; the same key on another
	// request is 422 idempotency_mismatch, and while the first is being
	// worked on, 409 idempotency_in_progress.
	IgnoreIdempotency bool
	// NoReplayHeader: replay an Idempotency-Key without the
	// Idempotent-Replayed header, as the contract allows (a replay is then
	// known only by its X-Credits-Charged: 0).
	NoReplayHeader bool
	// StartCredits is the balance X-Credits-Remaining counts down from. It goes
	// negative: overage is billed, never blocked.
	StartCredits int64
	// Prices is the price list. Zero value: DefaultPrices().
	Prices SeedPrices
	// Now tells the time (rate limit, ledger, idempotency expiry). Default
	// time.Now. Latency and delays use real timers.
	Now func() time.Time
}

// AbsurdCharges are the X-Credits-Charged values of AbsurdChargeRate: a
// billion, and one that times 2 overflows an int64.
var AbsurdCharges = []int64{1_000_000_000, 9223372036854275808}

// DefaultSeedOptions: key "test-key", no rate limit, no latency, hit rates
// profile 0.8, email 0.6, phone 0.3, no faults, seed 1, 1,000,000 credits.
func DefaultSeedOptions() SeedOptions {
	return SeedOptions{
		APIKeys:        []string{"test-key"},
		ProfileHitRate: 0.8,
		EmailHitRate:   0.6,
		PhoneHitRate:   0.3,
		Seed:           1,
		StartCredits:   1_000_000,
		Now:            time.Now,
	}
}

// SeedFaults are the options that can change while the fake runs ([Seed.SetFaults],
// POST /_fake/faults). In JSON, durations are strings such as "250ms".
type SeedFaults struct {
	RPS           float64
	Burst         int
	Latency       time.Duration
	LatencyJitter time.Duration
	FailRate      float64
	MalformedRate float64
	SlowRate      float64
	SlowDelay     time.Duration
	ResetRate     float64
}

// SeedLedgerEntry is one call that did work (a 2xx or 404 answer that was not
// a replay), whatever it cost (a missed email costs 0).
type SeedLedgerEntry struct {
	Time           time.Time `json:"time"`
	APIKey         string    `json:"-"`
	Endpoint       string    `json:"endpoint"` // "profile", "email", "phone", "bulk"
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	Inputs         []string  `json:"inputs"` // "profile_url=...", "name=...&company=...", "name=...&domain=...", "email=..."
	Status         int       `json:"status"`
	Credits        int64     `json:"credits"`
}

// SeedStats count what the fake was asked and how it answered.
type SeedStats struct {
	Requests   int64            `json:"requests"`    // /v1 requests
	ByEndpoint map[string]int64 `json:"by_endpoint"` // requests by endpoint
	ByStatus   map[int]int64    `json:"by_status"`   // answers by HTTP status (resets are not answers)
	Resets     int64            `json:"resets"`
	Malformed  int64            `json:"malformed"`
	Slow       int64            `json:"slow"`
	Replays    int64            `json:"replays"` // Idempotency-Key replays
	// AbsurdCharges: answers sent with an untrue X-Credits-Charged (AbsurdChargeRate).
	AbsurdCharges int64 `json:"absurd_charges"`
	Lookups       int64 `json:"lookups"` // lookups done: a bulk row counts once per stage looked up
	BilledCalls   int64 `json:"billed_calls"`
	TotalCharged  int64 `json:"total_charged"`
}

// Seed is the fake. It is safe for concurrent use.
type Seed struct {
	opts   SeedOptions // immutable after New but for the faults (below)
	keys   map[string]bool
	noPlan map[string]bool
	mux    *http.ServeMux

	mu        sync.Mutex
	faults    SeedFaults
	rng       *rand.Rand
	limiters  map[string]*rate.Limiter
	idem      map[idemScope]*idemEntry
	lastPurge time.Time
	ledger    []SeedLedgerEntry
	charged   int64
	stats     SeedStats
}

// NewSeed returns a fake configured by opts (see [SeedOptions] for its defaults).
func NewSeed(opts SeedOptions) *Seed {
	if len(opts.APIKeys) == 0 {
		opts.APIKeys = []string{"test-key"}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Prices == (SeedPrices{}) {
		opts.Prices = DefaultSeedPrices()
	}
	v := &Seed{
		opts:     opts,
		keys:     map[string]bool{},
		noPlan:   map[string]bool{},
		rng:      rand.New(rand.NewPCG(uint64(opts.Seed), 0x5eed)),
		limiters: map[string]*rate.Limiter{},
		idem:     map[idemScope]*idemEntry{},
		faults: SeedFaults{
			RPS: opts.RPS, Burst: opts.Burst,
			Latency: opts.Latency, LatencyJitter: opts.LatencyJitter,
			FailRate: opts.FailRate, MalformedRate: opts.MalformedRate,
			SlowRate: opts.SlowRate, SlowDelay: opts.SlowDelay, ResetRate: opts.ResetRate,
		},
		stats: SeedStats{ByEndpoint: map[string]int64{}, ByStatus: map[int]int64{}},
	}
	for _, k := range opts.APIKeys {
		v.keys[k] = true
	}
	for _, k := range opts.NoPlanKeys {
		v.noPlan[k] = true
	}
	v.mux = v.routes()
	return v
}

// ServeHTTP serves the vendor's API and the /_fake control endpoints.
func (v *Seed) ServeHTTP(w http.ResponseWriter, r *http.Request) { v.mux.ServeHTTP(w, r) }

// SetFaults changes fault rates, latency and the rate limit from now on.
func (v *Seed) SetFaults(f SeedFaults) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.setFaultsLocked(f)
}

// Faults returns the faults in force.
func (v *Seed) Faults() SeedFaults {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.faults
}

// Ledger returns a copy of the ledger, one entry per call that did work.
func (v *Seed) Ledger() []SeedLedgerEntry {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]SeedLedgerEntry, len(v.ledger))
	for i, e := range v.ledger {
		e.Inputs = append([]string(nil), e.Inputs...)
		out[i] = e
	}
	return out
}

// TotalCharged is the sum of every charge so far.
func (v *Seed) TotalCharged() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.charged
}

// Stats returns a copy of the counters.
func (v *Seed) Stats() SeedStats {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.stats
	s.ByEndpoint = make(map[string]int64, len(v.stats.ByEndpoint))
	for k, n := range v.stats.ByEndpoint {
		s.ByEndpoint[k] = n
	}
	s.ByStatus = make(map[int]int64, len(v.stats.ByStatus))
	for k, n := range v.stats.ByStatus {
		s.ByStatus[k] = n
	}
	s.TotalCharged = v.charged
	return s
}

// ProfileHit reports whether a profile lookup of q matches. An invalid query
// never does.
func (v *Seed) ProfileHit(q enrich.ProfileQuery) bool {
	h, ok := profileHash(q)
	rate := v.opts.ProfileHitRate
	if r, found := v.opts.ProfileHitRates[tldOf(q)]; found {
		rate = r
	}
	return ok && unit(h) < rate
}

// tldOf is the top-level domain of q's domain, else of its email's domain;
// "" when neither has one.
func tldOf(q enrich.ProfileQuery) string {
	host := q.Domain
	if host == "" {
		_, host, _ = strings.Cut(q.Email, "@")
	}
	host = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
	if i := strings.LastIndexByte(host, '.'); i >= 0 {
		return host[i+1:]
	}
	return ""
}

// EmailHit reports whether an email lookup of profileURL finds an address.
func (v *Seed) EmailHit(profileURL string) bool {
	return unit(hash("email-hit", normURL(profileURL))) < v.opts.EmailHitRate
}

// PhoneHit reports whether a phone lookup of profileURL finds numbers.
func (v *Seed) PhoneHit(profileURL string) bool {
	return unit(hash("phone-hit", normURL(profileURL))) < v.opts.PhoneHitRate
}

func burst(f SeedFaults) int {
	if f.Burst <= 0 {
		return 1
	}
	return f.Burst
}
