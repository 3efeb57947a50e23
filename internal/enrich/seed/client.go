package seed

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/upstream"
)

// Defaults of [Config].
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 8 << 20
	DefaultUserAgent        = "enrichq"
)

// Config configures a [Client]. BaseURL and APIKey are required.
type Config struct {
	// BaseURL is the vendor's base URL without /v1, e.g.
	// "https://api.vendor.example" (a trailing "/v1" is tolerated and
	// removed). It must not carry credentials, a query or a fragment.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <APIKey>". Secret: it is never
	// logged, and never part of an error's text (even if the vendor echoes it).
	APIKey upstream.Secret
	// HTTPClient makes the calls. Default: a client with Timeout 30s and a
	// transport that keeps up to 64 idle connections to the vendor (the
	// standard library's default keeps 2, too few for concurrent workers).
	// Whatever its CheckRedirect, the client follows no redirect
	// (NoRedirects).
	HTTPClient *http.Client
	// Costs is the cost table: the price of a class of answer the vendor has
	// not shown yet, returned by [Client.Costs]. Zero value: DefaultCosts().
	Costs enrich.CostTable
	// Prices prices each answer (Charge.Estimate): what Credits is when
	// X-Credits-Charged is absent, and what a replayed answer's billed
	// earlier send cost. Default: Costs. A [enrich.PriceBook] of the vendor account
	// prices by what the vendor's own answers showed.
	Prices enrich.Prices
	// UserAgent is sent as User-Agent. Default "enrichq".
	UserAgent string
	// MaxResponseBytes bounds how much of an answer is read. Default 8 MiB;
	// a longer 2xx answer is a transient error whose outcome is unknown.
	MaxResponseBytes int64
	// Now tells the time, to read a Retry-After given as an HTTP date.
	// Default time.Now.
	Now func() time.Time
}

// Client calls the enrichment vendor. It is safe for concurrent use. Each
// method makes exactly one HTTP call (or none, when its input is refused) and
// never retries.
type Client struct {
	base   string // scheme://host[/path], without /v1 and without a trailing slash
	key    string
	call   *upstream.Caller
	costs  enrich.CostTable
	prices enrich.Prices
	now    func() time.Time
}

// String names the client without its API key.
func (c *Client) String() string { return "seed.Client{" + c.base + "}" }

// GoString is String.
func (c *Client) GoString() string { return c.String() }

// NewClient validates cfg, fills its defaults and returns a client.
func NewClient(cfg Config) (*Client, error) {
	base, err := enrich.ParseBaseURL(cfg.BaseURL, "seed", "/v1")
	if err != nil {
		return nil, err
	}
	key, err := cfg.APIKey.Header("seed")
	if err != nil {
		return nil, err
	}
	c := &Client{
		base:   base,
		key:    key,
		call:   &upstream.Caller{HTTP: cfg.HTTPClient, UserAgent: cfg.UserAgent, MaxBody: cfg.MaxResponseBytes, Secret: key},
		costs:  cfg.Costs,
		prices: cfg.Prices,
		now:    cfg.Now,
	}
	if c.call.HTTP == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		c.call.HTTP = &http.Client{Timeout: DefaultTimeout, Transport: t}
	}
	c.call.HTTP = enrich.NoRedirects(c.call.HTTP)
	if c.costs == (enrich.CostTable{}) {
		c.costs = enrich.DefaultCosts()
	}
	if err := c.costs.Validate(); err != nil {
		return nil, err
	}
	if c.prices == nil {
		c.prices = c.costs
	}
	if c.call.UserAgent == "" {
		c.call.UserAgent = DefaultUserAgent
	}
	if c.call.MaxBody <= 0 {
		c.call.MaxBody = DefaultMaxResponseBytes
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// Costs is the client's cost table (for reservations and estimates).
func (c *Client) Costs() enrich.CostTable { return c.costs }

// Profile looks a profile up by profile URL, by email, or by name and company
// or domain. No match is a result with a nil Profile, not an error (and is
// charged: the search was done). An invalid query is refused before any call with a
// permanent error.
func (c *Client) Profile(ctx context.Context, q enrich.ProfileQuery, idempotencyKey string) (ProfileResult, error) {
	if err := q.Validate(); err != nil {
		return ProfileResult{}, enrich.Refused(endpointProfile, "invalid_query", err.Error())
	}
	r, e := c.do(ctx, endpointProfile, http.MethodGet, pathProfile, profileParams(q), nil, idempotencyKey)
	if e != nil {
		return ProfileResult{}, e
	}
	var p *enrich.Profile
	if r.answer == answerBody {
		var err error
		if p, err = decodeProfile(r.body); err != nil {
			return ProfileResult{}, c.malformed(endpointProfile, r, err)
		}
	}
	return ProfileResult{Profile: p, Charge: r.chargeOf(c.prices, enrich.ProfileClass(q.Kind(), p != nil)), RateLimit: r.rateLimit}, nil
}

// Email looks up the email address of a profile. No match is a result with a
// nil Email.
func (c *Client) Email(ctx context.Context, profileURL, idempotencyKey string) (EmailResult, error) {
	if !set(profileURL) {
		return EmailResult{}, enrich.Refused(endpointEmail, "invalid_query", "profile URL is required")
	}
	r, e := c.do(ctx, endpointEmail, http.MethodGet, pathEmail, lookupParams(profileURL), nil, idempotencyKey)
	if e != nil {
		return EmailResult{}, e
	}
	var em *enrich.Email
	if r.answer == answerBody {
		var err error
		if em, err = parseEmail(r.body); err != nil {
			return EmailResult{}, c.malformed(endpointEmail, r, err)
		}
	}
	return EmailResult{Email: em, Charge: r.chargeOf(c.prices, enrich.EmailClass(em)), RateLimit: r.rateLimit}, nil
}

// Phone looks up the phone numbers of a profile. No match is a result with
// nil Phones.
func (c *Client) Phone(ctx context.Context, profileURL, idempotencyKey string) (PhoneResult, error) {
	if !set(profileURL) {
		return PhoneResult{}, enrich.Refused(endpointPhone, "invalid_query", "profile URL is required")
	}
	r, e := c.do(ctx, endpointPhone, http.MethodGet, pathPhone, lookupParams(profileURL), nil, idempotencyKey)
	if e != nil {
		return PhoneResult{}, e
	}
	var ph *enrich.Phones
	if r.answer == answerBody {
		var err error
		if ph, err = enrich.ParsePhonesRaw(r.body); err != nil {
			return PhoneResult{}, c.malformed(endpointPhone, r, err)
		}
	}
	return PhoneResult{Phones: ph, Charge: r.chargeOf(c.prices, enrich.PhoneClass(ph)), RateLimit: r.rateLimit}, nil
}

// Bulk looks up to [enrich.MaxBulkRows] profiles in one call, and for each match the
// stages in include (email, phone; the profile is implied).
// Items[i] answers rows[i]. More rows than MaxBulkRows, or an unknown stage,
// is refused before any call with a permanent error; an invalid row gets a
// permanent per-row error and is not sent. With no row to send, no call is
// made. The call's error is for the whole call (no item is then known);
// per-row outcomes are in each item's Err.
func (c *Client) Bulk(ctx context.Context, rows []enrich.ProfileQuery, include []domain.Stage, idempotencyKey string) (BulkResult, error) {
	if len(rows) > enrich.MaxBulkRows {
		return BulkResult{}, enrich.Refused(endpointBulk, "too_many_rows", fmt.Sprintf("%d rows, at most %d per call", len(rows), enrich.MaxBulkRows))
	}
	var stages []domain.Stage
	for _, s := range include {
		if !s.Valid() {
			return BulkResult{}, enrich.Refused(endpointBulk, "invalid_include", fmt.Sprintf("unknown stage %q", enrich.Clip(string(s), 50)))
		}
		if s != domain.StageProfile && !hasStage(stages, s) {
			stages = append(stages, s)
		}
	}
	items := make([]enrich.BulkItem, len(rows))
	sent := make([]enrich.ProfileQuery, 0, len(rows))
	at := make([]int, 0, len(rows)) // at[j] is the row that wire row j is
	for i, q := range rows {
		if err := q.Validate(); err != nil {
			items[i].Err = enrich.Refused(endpointBulk, "invalid_query", err.Error())
			continue
		}
		sent = append(sent, q)
		at = append(at, i)
	}
	if len(sent) == 0 {
		return BulkResult{Items: items}, nil
	}
	body, err := bulkBody(sent, stages)
	if err != nil {
		return BulkResult{}, enrich.Refused(endpointBulk, "invalid_query", err.Error())
	}
	r, e := c.do(ctx, endpointBulk, http.MethodPost, pathBulk, nil, body, idempotencyKey)
	if e != nil {
		return BulkResult{}, e
	}
	got, err := decodeBulk(r.body, len(sent))
	if err != nil {
		return BulkResult{}, c.malformed(endpointBulk, r, err)
	}
	var estimate int64
	for j, it := range got {
		if it.Err != nil {
			it.Err.Redacted(c.key)
		}
		if !hasStage(stages, domain.StageEmail) {
			it.Email = nil
		}
		if !hasStage(stages, domain.StagePhone) {
			it.Phones = nil
		}
		it.EstimatedCredits = enrich.BulkRowPrice(c.prices, c.costs, sent[j], stages, it)
		estimate += it.EstimatedCredits
		items[at[j]] = it
	}
	return BulkResult{Items: items, Charge: r.charge.Or(estimate), RateLimit: r.rateLimit}, nil
}

func hasStage(list []domain.Stage, s domain.Stage) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// response is an answer that is not an error: a 2xx to decode, or a no-match.
type response struct {
	status    int
	body      []byte
	answer    answer
	charge    enrich.Charge // as the headers said
	rateLimit *enrich.RateLimit
}

// chargeOf is the charge of an answer of class: as the vendor reported it,
// else its price.
func (r *response) chargeOf(prices enrich.Prices, class enrich.PriceClass) enrich.Charge {
	estimate, _ := prices.Price(class)
	ch := r.charge.Or(estimate)
	ch.Class = class
	return ch
}

// do makes one call and returns the answer, or the call's *Error.
func (c *Client) do(ctx context.Context, endpoint, method, path string, query url.Values, body []byte, idempotencyKey string) (*response, *enrich.Error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	h := http.Header{}
	setRequestHeaders(h, c.key, idempotencyKey, body != nil)
	resp, err := c.call.Do(ctx, upstream.Request{Method: method, URL: u, Header: h, Body: body})
	if resp == nil {
		return nil, enrich.CallError(endpoint, err)
	}
	charge, rl := parseCharge(resp.Header), parseRateLimit(resp.Header)
	if resp.Resent {
		// http.Transport re-sends a request with an Idempotency-Key (or a GET)
		// after a reset of a reused connection. The first send may have been
		// billed, and the answer we hold is then the vendor's free replay: its
		// X-Credits-Charged is not what the call cost. Charge the cost table,
		// and count an error at the reservation: its first send may be billed.
		charge.Reported, charge.Credits, charge.Resent = false, 0, true
	}
	if err != nil { // a 2xx cut short or too long: the work was done, its result is lost
		return nil, enrich.CallFailed(enrich.CallError(endpoint, err), c.key, charge, rl)
	}
	ans, e := classify(endpoint, resp.Status, resp.Header, resp.Body, c.now())
	if e != nil {
		return nil, enrich.CallFailed(e, c.key, charge, rl)
	}
	return &response{status: resp.Status, body: resp.Body, answer: ans, charge: charge, rateLimit: rl}, nil
}

func (c *Client) malformed(endpoint string, r *response, err error) *enrich.Error {
	return enrich.MalformedError(c.key, endpoint, r.status, r.charge, r.rateLimit, err)
}

func set(s string) bool { return strings.TrimSpace(s) != "" }
