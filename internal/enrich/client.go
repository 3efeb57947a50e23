package enrich

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/enrichq/enrichq/internal/domain"
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
	APIKey string
	// HTTPClient makes the calls. Default: a client with Timeout 30s and a
	// transport that keeps up to 64 idle connections to the vendor (the
	// standard library's default keeps 2, too few for concurrent workers).
	// Whatever its CheckRedirect, the client follows no redirect
	// (NoRedirects).
	HTTPClient *http.Client
	// Costs is the cost table: the price of a class of answer the vendor has
	// not shown yet, returned by [Client.Costs]. Zero value: DefaultCosts().
	Costs CostTable
	// Prices prices each answer (Charge.Estimate): what Credits is when
	// X-Credits-Charged is absent, and what a replayed answer's billed
	// earlier send cost. Default: Costs. A [PriceBook] of the vendor account
	// prices by what the vendor's own answers showed.
	Prices Prices
	// UserAgent is sent as User-Agent. Default "enrichq".
	UserAgent string
	// MaxResponseBytes bounds how much of an answer is read. Default 8 MiB;
	// a longer 2xx answer is a transient error whose outcome is unknown.
	MaxResponseBytes int64
	// Now tells the time, to read a Retry-After given as an HTTP date.
	// Default time.Now.
	Now func() time.Time
}

// String prints the configuration without the API key.
func (c Config) String() string {
	return fmt.Sprintf("enrich.Config{BaseURL: %q, APIKey: %s, UserAgent: %q}", c.BaseURL, redactedKey(c.APIKey), c.UserAgent)
}

// GoString is String, so that %#v does not print the API key either.
func (c Config) GoString() string { return c.String() }

// LogValue logs the configuration without the API key.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", c.BaseURL),
		slog.String("api_key", redactedKey(c.APIKey)),
		slog.String("user_agent", c.UserAgent),
	)
}

func redactedKey(k string) string {
	if k == "" {
		return "(none)"
	}
	return "[REDACTED]"
}

// Client calls the enrichment vendor. It is safe for concurrent use. Each
// method makes exactly one HTTP call (or none, when its input is refused) and
// never retries.
type Client struct {
	base    string // scheme://host[/path], without /v1 and without a trailing slash
	key     string
	hc      *http.Client
	costs   CostTable
	prices  Prices
	ua      string
	maxBody int64
	now     func() time.Time
}

// String names the client without its API key.
func (c *Client) String() string { return "enrich.Client{" + c.base + "}" }

// GoString is String.
func (c *Client) GoString() string { return c.String() }

// NewClient validates cfg, fills its defaults and returns a client.
func NewClient(cfg Config) (*Client, error) {
	base, err := ParseBaseURL(cfg.BaseURL, "enrich", "/v1")
	if err != nil {
		return nil, err
	}
	key := strings.TrimSpace(cfg.APIKey)
	if key == "" {
		return nil, errors.New("enrich: API key is required")
	}
	if strings.IndexFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return nil, errors.New("enrich: API key holds blanks or control characters")
	}
	c := &Client{
		base:    base,
		key:     key,
		hc:      cfg.HTTPClient,
		costs:   cfg.Costs,
		prices:  cfg.Prices,
		ua:      cfg.UserAgent,
		maxBody: cfg.MaxResponseBytes,
		now:     cfg.Now,
	}
	if c.hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		c.hc = &http.Client{Timeout: DefaultTimeout, Transport: t}
	}
	c.hc = NoRedirects(c.hc)
	if c.costs == (CostTable{}) {
		c.costs = DefaultCosts()
	}
	if err := c.costs.Validate(); err != nil {
		return nil, err
	}
	if c.prices == nil {
		c.prices = c.costs
	}
	if c.ua == "" {
		c.ua = DefaultUserAgent
	}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxResponseBytes
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// Costs is the client's cost table (for reservations and estimates).
func (c *Client) Costs() CostTable { return c.costs }

// Profile looks a profile up by profile URL, by email, or by name and company
// or domain. No match is a result with a nil Profile, not an error (and is
// charged: the search was done). An invalid query is refused before any call with a
// permanent error.
func (c *Client) Profile(ctx context.Context, q ProfileQuery, idempotencyKey string) (ProfileResult, error) {
	if err := q.Validate(); err != nil {
		return ProfileResult{}, refused(endpointProfile, "invalid_query", err.Error())
	}
	r, e := c.do(ctx, endpointProfile, http.MethodGet, pathProfile, profileParams(q), nil, idempotencyKey)
	if e != nil {
		return ProfileResult{}, e
	}
	var p *Profile
	if r.answer == answerBody {
		var err error
		if p, err = decodeProfile(r.body); err != nil {
			return ProfileResult{}, c.malformed(endpointProfile, r, err)
		}
	}
	return ProfileResult{Profile: p, Charge: r.chargeOf(c.prices, ProfileClass(q.Kind(), p != nil)), RateLimit: r.rateLimit}, nil
}

// Email looks up the email address of a profile. No match is a result with a
// nil Email.
func (c *Client) Email(ctx context.Context, profileURL, idempotencyKey string) (EmailResult, error) {
	if !set(profileURL) {
		return EmailResult{}, refused(endpointEmail, "invalid_query", "profile URL is required")
	}
	r, e := c.do(ctx, endpointEmail, http.MethodGet, pathEmail, lookupParams(profileURL), nil, idempotencyKey)
	if e != nil {
		return EmailResult{}, e
	}
	var em *Email
	if r.answer == answerBody {
		var err error
		if em, err = decodeEmail(r.body); err != nil {
			return EmailResult{}, c.malformed(endpointEmail, r, err)
		}
	}
	return EmailResult{Email: em, Charge: r.chargeOf(c.prices, EmailClass(em)), RateLimit: r.rateLimit}, nil
}

// Phone looks up the phone numbers of a profile. No match is a result with
// nil Phones.
func (c *Client) Phone(ctx context.Context, profileURL, idempotencyKey string) (PhoneResult, error) {
	if !set(profileURL) {
		return PhoneResult{}, refused(endpointPhone, "invalid_query", "profile URL is required")
	}
	r, e := c.do(ctx, endpointPhone, http.MethodGet, pathPhone, lookupParams(profileURL), nil, idempotencyKey)
	if e != nil {
		return PhoneResult{}, e
	}
	var ph *Phones
	if r.answer == answerBody {
		var err error
		if ph, err = decodePhones(r.body); err != nil {
			return PhoneResult{}, c.malformed(endpointPhone, r, err)
		}
	}
	return PhoneResult{Phones: ph, Charge: r.chargeOf(c.prices, PhoneClass(ph)), RateLimit: r.rateLimit}, nil
}

// Bulk looks up to [MaxBulkRows] profiles in one call, and for each match the
// stages in include (email, phone; the profile is implied).
// Items[i] answers rows[i]. More rows than MaxBulkRows, or an unknown stage,
// is refused before any call with a permanent error; an invalid row gets a
// permanent per-row error and is not sent. With no row to send, no call is
// made. The call's error is for the whole call (no item is then known);
// per-row outcomes are in each item's Err.
func (c *Client) Bulk(ctx context.Context, rows []ProfileQuery, include []domain.Stage, idempotencyKey string) (BulkResult, error) {
	if len(rows) > MaxBulkRows {
		return BulkResult{}, refused(endpointBulk, "too_many_rows", fmt.Sprintf("%d rows, at most %d per call", len(rows), MaxBulkRows))
	}
	var stages []domain.Stage
	for _, s := range include {
		if !s.Valid() {
			return BulkResult{}, refused(endpointBulk, "invalid_include", fmt.Sprintf("unknown stage %q", Clip(string(s), 50)))
		}
		if s != domain.StageProfile && !hasStage(stages, s) {
			stages = append(stages, s)
		}
	}
	items := make([]BulkItem, len(rows))
	sent := make([]ProfileQuery, 0, len(rows))
	at := make([]int, 0, len(rows)) // at[j] is the row that wire row j is
	for i, q := range rows {
		if err := q.Validate(); err != nil {
			items[i].Err = refused(endpointBulk, "invalid_query", err.Error())
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
		return BulkResult{}, refused(endpointBulk, "invalid_query", err.Error())
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
			c.redact(it.Err)
		}
		if !hasStage(stages, domain.StageEmail) {
			it.Email = nil
		}
		if !hasStage(stages, domain.StagePhone) {
			it.Phones = nil
		}
		it.EstimatedCredits = rowPrice(c.prices, c.costs, sent[j], stages, it)
		estimate += it.EstimatedCredits
		items[at[j]] = it
	}
	return BulkResult{Items: items, Charge: r.chargeOr(estimate), RateLimit: r.rateLimit}, nil
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
	charge    Charge // as the headers said
	rateLimit *RateLimit
}

// chargeOf is the charge of an answer of class: as the vendor reported it,
// else its price.
func (r *response) chargeOf(prices Prices, class PriceClass) Charge {
	estimate, _ := prices.Price(class)
	ch := r.chargeOr(estimate)
	ch.Class = class
	return ch
}

// chargeOr is the charge the vendor reported, else estimate, the answer's price.
func (r *response) chargeOr(estimate int64) Charge {
	ch := r.charge
	ch.Estimate = estimate
	if !ch.Reported {
		ch.Credits = estimate
	}
	return ch
}

// do makes one call and returns the answer, or the call's *Error.
func (c *Client) do(ctx context.Context, endpoint, method, path string, query url.Values, body []byte, idempotencyKey string) (*response, *Error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	var sent atomic.Bool    // the request was written: the vendor may have done the work
	var writes atomic.Int32 // more than one: http.Transport re-sent it by itself
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { sent.Store(true); writes.Add(1) },
	})
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, c.redact(&Error{Class: ClassPermanent, Endpoint: endpoint, Code: "invalid_request", Message: "cannot build the request: " + ErrText(err), Err: err})
	}
	setRequestHeaders(req.Header, c.key, idempotencyKey, body != nil)
	req.Header.Set("User-Agent", c.ua)

	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.transportError(endpoint, 0, err, sent.Load())
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	_ = resp.Body.Close()
	ok2xx := resp.StatusCode >= 200 && resp.StatusCode <= 299
	charge, rl := parseCharge(resp.Header), parseRateLimit(resp.Header)
	if writes.Load() > 1 {
		// http.Transport re-sends a request with an Idempotency-Key (or a GET)
		// after a reset of a reused connection. The first send may have been
		// billed, and the answer we hold is then the vendor's free replay: its
		// X-Credits-Charged is not what the call cost. Charge the cost table,
		// and count an error at the reservation: its first send may be billed.
		charge.Reported, charge.Credits, charge.Resent = false, 0, true
	}
	fail := func(e *Error) *Error {
		if writes.Load() > 1 {
			e.OutcomeUnknown = true
		}
		e.Charge = errorCharge(charge, e)
		e.RateLimit = rl
		return c.redact(e)
	}
	switch {
	case err != nil && ok2xx: // the answer was cut: the work was done, its result is lost
		return nil, fail(c.transportError(endpoint, resp.StatusCode, err, true))
	case int64(len(data)) > c.maxBody && ok2xx:
		return nil, fail(&Error{Class: ClassTransient, Endpoint: endpoint, Status: resp.StatusCode, Code: "response_too_large",
			Message: fmt.Sprintf("answer longer than %d bytes", c.maxBody), OutcomeUnknown: true})
	}
	// An error answer cut short or too long is still classified by its status.
	ans, e := classify(endpoint, resp.StatusCode, resp.Header, data, c.now())
	if e != nil {
		return nil, fail(e)
	}
	return &response{status: resp.StatusCode, body: data, answer: ans, charge: charge, rateLimit: rl}, nil
}

func (c *Client) transportError(endpoint string, status int, err error, sent bool) *Error {
	return TransportError(c.key, endpoint, status, err, sent)
}

func (c *Client) malformed(endpoint string, r *response, err error) *Error {
	return MalformedError(c.key, endpoint, r.status, r.charge, r.rateLimit, err)
}

func errorCharge(ch Charge, e *Error) *Charge { return ErrorCharge(ch, e) }

func refused(endpoint, code, msg string) *Error { return Refused(endpoint, code, msg) }

func (c *Client) redact(e *Error) *Error { return e.Redacted(c.key) }
