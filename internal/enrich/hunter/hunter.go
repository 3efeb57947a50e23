// Package hunter is the adapter of an email finder and verifier shaped like
// Hunter's API v2, behind enrich's [enrich.Vendor] contract.
//
// It differs from the seed's and pdl's vendors in almost every way a vendor
// can, and hides each: the key in an X-API-KEY header; an email found from a
// person's name and a company's domain, with no profile (the email stage),
// and an address checked (the verify stage); one call per person (no bulk
// endpoint); no idempotency keys; no credit header on any answer, so each
// answer is priced here by the contract's rules (a found email one search, a
// miss nothing; a verification one, except webmail, disposable and unknown)
// and the key's usage is read from GET /v2/account ([Vendor.Balance], the
// balance witness); 403 "slow down" ([enrich.ClassRateLimited]), 429 "the
// month's quota is spent" ([enrich.ClassOutOfCredits]), 202 and 222 "ask
// again later" ([enrich.ClassPending]), 451 "this person opted out"
// ([enrich.ClassSuppressed]).
//
// Every wire assumption is in wire.go. A method makes exactly one HTTP call
// (or none, when it refuses its input) and never retries.
package hunter

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/upstream"
)

// Defaults of [Config].
const (
	DefaultName             = "hunter"
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 1 << 20 // one person's answer is a few KiB
	DefaultUserAgent        = "enrichq"
)

// Config configures a [Vendor]. BaseURL and APIKey are required.
type Config struct {
	// Name is the vendor's configured name (default "hunter").
	Name string
	// BaseURL is the vendor's base URL without /v2, e.g.
	// "https://api.hunter.io" (a trailing "/v2" is tolerated and removed).
	BaseURL string
	// APIKey is sent as X-API-KEY, never in the URL: a URL ends up in
	// errors, proxies' and servers' logs. Secret: never logged, never part
	// of an error's text.
	APIKey upstream.Secret
	// HTTPClient makes the calls. Default: Timeout 30s. No redirect is followed.
	HTTPClient *http.Client
	// UserAgent is sent as User-Agent. Default "enrichq".
	UserAgent string
	// MaxResponseBytes bounds how much of an answer is read. Default 1 MiB.
	MaxResponseBytes int64
	// SearchCredits is what one found email costs in the vendor's credits;
	// VerifyCredits what one billed verification costs. 0: 1 each.
	SearchCredits, VerifyCredits int64
}

// Vendor is the adapter. It is safe for concurrent use.
type Vendor struct {
	name   string
	base   string
	key    string
	call   *upstream.Caller
	search int64 // credits of a found email
	verify int64 // credits of a billed verification
}

var (
	_ enrich.Vendor        = (*Vendor)(nil)
	_ enrich.BalanceReader = (*Vendor)(nil)
	_ enrich.Endpoints     = (*Vendor)(nil)
)

// String names the adapter without its API key.
func (v *Vendor) String() string { return "hunter.Vendor{" + v.name + " " + v.base + "}" }

// GoString is String.
func (v *Vendor) GoString() string { return v.String() }

// New validates cfg, fills its defaults and returns the adapter.
func New(cfg Config) (*Vendor, error) {
	base, err := enrich.ParseBaseURL(cfg.BaseURL, "hunter", "/v2")
	if err != nil {
		return nil, err
	}
	key, err := cfg.APIKey.Header("hunter")
	if err != nil {
		return nil, err
	}
	if cfg.SearchCredits < 0 || cfg.VerifyCredits < 0 {
		return nil, fmt.Errorf("hunter: a search's price %d, a verification's %d: want 0 or more", cfg.SearchCredits, cfg.VerifyCredits)
	}
	v := &Vendor{name: cfg.Name, base: base, key: key,
		call:   &upstream.Caller{HTTP: cfg.HTTPClient, UserAgent: cfg.UserAgent, MaxBody: cfg.MaxResponseBytes, Secret: key, Whole: upstream.OnlyOK},
		search: cfg.SearchCredits, verify: cfg.VerifyCredits}
	if v.name == "" {
		v.name = DefaultName
	}
	if v.search == 0 {
		v.search = 1
	}
	if v.verify == 0 {
		v.verify = 1
	}
	if v.call.HTTP == nil {
		v.call.HTTP = &http.Client{Timeout: DefaultTimeout}
	}
	v.call.HTTP = upstream.NoRedirects(v.call.HTTP)
	if v.call.UserAgent == "" {
		v.call.UserAgent = DefaultUserAgent
	}
	if v.call.MaxBody <= 0 {
		v.call.MaxBody = DefaultMaxResponseBytes
	}
	return v, nil
}

// Name is the vendor's configured name.
func (v *Vendor) Name() string { return v.name }

// Caps: the email from a person's name and a company's domain (or, weaker,
// its name), no profile needed; the verify stage from an email address; one
// stage per call, no bulk, no role search; a found email billed, a miss
// free; a verification billed except for the free statuses; a spent quota
// refuses calls (429); no idempotency keys; no credit or balance header.
func (v *Vendor) Caps() enrich.Caps {
	return enrich.Caps{
		Stages: []domain.Stage{domain.StageEmail, domain.StageVerify},
		Inputs: map[domain.Stage][]domain.InputKind{
			domain.StageEmail:  {domain.InputNameDomain, domain.InputNameCompany},
			domain.StageVerify: {domain.InputEmail},
		},
		Billing: enrich.Billing{
			Rules: map[domain.Stage]enrich.BillingRule{
				domain.StageEmail:  enrich.BillPerMatch,
				domain.StageVerify: enrich.BillPerField,
			},
			BlocksAtZero: true,
			HonoursKeys:  domain.HonoursKeysFalse,
		},
	}
}

// Price: a search's credits for a found email, nothing for a miss; a
// verification's credits for a verdict (the free verdicts cost nothing,
// so a miss, too, is 0); nothing for a question refused before the call.
func (v *Vendor) Price(q enrich.Question) enrich.Price {
	s, e := v.refuse(q)
	if e != nil {
		return enrich.Price{}
	}
	p := v.priceOf(s)
	return enrich.Price{Miss: 0, Hit: p, Worst: p}
}

// MaxCharge: the contract bills one search or one verification a send;
// a call http.Transport re-sent may be billed for both sends.
func (v *Vendor) MaxCharge(q enrich.Question) int64 { return 2 * v.Price(q).Worst }

func (v *Vendor) priceOf(s domain.Stage) int64 {
	if s == domain.StageVerify {
		return v.verify
	}
	return v.search
}

// Endpoint names the endpoint a call of stage goes to.
func (v *Vendor) Endpoint(stage domain.Stage) string {
	if stage == domain.StageVerify {
		return pathVerifier
	}
	return pathFinder
}

// refuse is the stage q asks, or the error of a question this vendor
// cannot answer, before any call.
func (v *Vendor) refuse(q enrich.Question) (domain.Stage, *enrich.Error) {
	if len(q.Stages) != 1 {
		return "", enrich.Refused(endpointFinder, "invalid_stage", fmt.Sprintf("ask one stage a call, not %d", len(q.Stages)))
	}
	s := q.Stages[0]
	endpoint := endpointOf(s)
	switch {
	case q.Role:
		return "", enrich.Refused(endpoint, "role_search_unsupported", "this vendor does not look people up by role title")
	case s != domain.StageEmail && s != domain.StageVerify:
		return "", enrich.Refused(endpoint, "invalid_stage", fmt.Sprintf("this vendor answers email and verify, not %q", enrich.Clip(string(s), 50)))
	}
	if err := q.Query.Validate(); err != nil {
		return "", enrich.Refused(endpoint, "invalid_query", err.Error())
	}
	if k := q.Query.Kind(); !v.Caps().Answers(s, k, false) {
		return "", enrich.Refused(endpoint, "invalid_query", fmt.Sprintf("the %s stage takes %s, not %s", s, inputsOf(s), k))
	}
	return s, nil
}

func inputsOf(s domain.Stage) string {
	if s == domain.StageVerify {
		return "an email address"
	}
	return "a name with a domain or a company"
}

// Ask makes one call: GET /v2/email-finder for the email stage, GET
// /v2/email-verifier for the verify stage. A miss is an Answer with no
// Email, free. The idempotency key is not sent: the vendor takes none.
func (v *Vendor) Ask(ctx context.Context, q enrich.Question, _ string) (enrich.Answer, error) {
	s, e := v.refuse(q)
	if e != nil {
		return enrich.Answer{}, e
	}
	endpoint := endpointOf(s)
	var u string
	if s == domain.StageVerify {
		u = v.base + pathVerifier + "?" + url.Values{paramEmail: {q.Query.Email}}.Encode()
	} else {
		u = v.base + pathFinder + "?" + finderParams(q.Query).Encode()
	}
	r, e := v.do(ctx, endpoint, u)
	if e != nil {
		return enrich.Answer{}, e
	}
	if r.miss {
		return enrich.Answer{Charge: r.priced(0, v.priceOf(s))}, nil
	}
	var (
		em      *enrich.Email
		company string
		err     error
	)
	if s == domain.StageVerify {
		em, err = decodeVerifier(r.body, q.Query.Email)
	} else {
		em, company, err = decodeFinder(r.body)
	}
	if err != nil {
		return enrich.Answer{}, enrich.MalformedError(v.key, endpoint, r.status, enrich.Charge{}, nil, err)
	}
	a := enrich.Answer{Email: em, Charge: r.priced(v.charge(s, em), v.priceOf(s))}
	if s == domain.StageEmail && em != nil && !rightPerson(q.Query, em.Address, company) {
		a.Email, a.WrongPerson = nil, true // found and billed, of someone else
	}
	return a, nil
}

// charge is what an answer of stage s costs by the contract's rules.
func (v *Vendor) charge(s domain.Stage, em *enrich.Email) int64 {
	switch {
	case em == nil:
		return 0
	case s == domain.StageVerify && !billedStatus(em.Status):
		return 0
	}
	return v.priceOf(s)
}

// priced is the charge of an answer; when http.Transport sent the request
// twice (a reused connection reset), the first send is counted too, at its
// worst: with no idempotency key the vendor may have billed both, and
// Estimate keeps what the answer itself cost.
func (r *response) priced(credits, worst int64) enrich.Charge {
	ch := enrich.Charge{}.Or(credits) // priced here: no answer reports one
	if r.resent {
		ch.Resent, ch.Credits = true, credits+worst
	}
	return ch
}

// AskBulk: the vendor has no bulk endpoint (Caps().MaxBulk is 0).
func (v *Vendor) AskBulk(context.Context, []enrich.Question, string) (enrich.BulkAnswer, error) {
	return enrich.BulkAnswer{}, enrich.Refused("bulk", "bulk_unsupported", "this vendor has no bulk endpoint: ask one person a call")
}

// Balance makes one GET /v2/account (free) and returns the key's remaining
// credits: each quota's unused part priced at its credits, summed. Only
// its fall between readings means anything (a renewed month raises it).
func (v *Vendor) Balance(ctx context.Context) (enrich.Charge, error) {
	u, err := v.Usage(ctx)
	if err != nil {
		return enrich.Charge{}, err
	}
	left := (u.Searches.Available-u.Searches.Used)*v.search + (u.Verifications.Available-u.Verifications.Used)*v.verify
	return enrich.Charge{Remaining: left, RemainingReported: true}, nil
}

// Usage makes one GET /v2/account (free): the two quotas' counters as the
// vendor keeps them.
func (v *Vendor) Usage(ctx context.Context) (Usage, error) {
	r, e := v.do(ctx, endpointAccount, v.base+pathAccount)
	if e != nil {
		return Usage{}, e
	}
	u, err := decodeAccount(r.body)
	if err != nil {
		return Usage{}, enrich.MalformedError(v.key, endpointAccount, r.status, enrich.Charge{}, nil, err)
	}
	return u, nil
}

// response is an answer that is not an error: a 200 to decode, or a free miss.
type response struct {
	status int
	body   []byte
	miss   bool
	resent bool // http.Transport sent it twice: the first send may be billed too
}

// do makes one GET and returns the answer, or the call's *enrich.Error.
func (v *Vendor) do(ctx context.Context, endpoint, u string) (*response, *enrich.Error) {
	h := http.Header{}
	h.Set(headerAPIKey, v.key)
	h.Set("Accept", "application/json")
	resp, err := v.call.Do(ctx, upstream.Request{Method: http.MethodGet, URL: u, Header: h})
	if err != nil { // no answer, or a 200 cut short or too long
		return nil, enrich.CallError(endpoint, err)
	}
	miss, e := classify(endpoint, resp.Status, resp.Header, resp.Body)
	if e != nil {
		// Without idempotency keys a re-sent request may have been billed
		// twice; an answer that is an error does not say the first was free.
		return nil, enrich.CallFailed(e, v.key, enrich.Charge{Resent: resp.Resent && endpoint != endpointAccount}, nil)
	}
	return &response{status: resp.Status, body: resp.Body, miss: miss, resent: resp.Resent}, nil
}
