// Package pdl is the adapter of a person-data vendor shaped like People
// Data Labs' v5 person API, behind enrich's [enrich.Vendor] contract.
//
// It differs from the seed's vendor on every axis the caller cares about,
// and hides each: an X-Api-Key header; one person record answers the
// profile, the email and the phones at once (Caps().FillsAll), for one
// credit per match, a no-match (404) free; a bulk answer paired by the
// "metadata" the vendor echoes; 402 when the key is out of credits (it
// blocks at zero, [enrich.ClassOutOfCredits]); a fixed 60-second rate
// window whose end X-RateLimit-Reset gives as a UTC time; no idempotency
// keys, so a resent call is billed again. It does not search by role title.
//
// Every wire assumption is in wire.go. Like the seed's client, a method
// makes exactly one HTTP call (or none, when it refuses its input) and
// never retries.
package pdl

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/upstream"
)

// Defaults of [Config].
const (
	DefaultName             = "pdl"
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 16 << 20 // a bulk of 100 full person records
	DefaultUserAgent        = "enrichq"
)

// Config configures a [Vendor]. BaseURL and APIKey are required.
type Config struct {
	// Name is the vendor's configured name (default "pdl").
	Name string
	// BaseURL is the vendor's base URL without /v5, e.g.
	// "https://api.peopledatalabs.com" (a trailing "/v5" is tolerated and
	// removed). It must not carry credentials, a query or a fragment.
	BaseURL string
	// APIKey is sent as X-Api-Key. Secret: never logged, never part of an
	// error's text (even if the vendor echoes it).
	APIKey upstream.Secret
	// HTTPClient makes the calls. Default: Timeout 30s and up to 64 idle
	// connections to the vendor. Whatever its CheckRedirect, no redirect is
	// followed.
	HTTPClient *http.Client
	// MinLikelihood is sent as min_likelihood by the question's input kind
	// (1-10): weaker matches come back as 404, free. A kind not in it takes
	// DefaultMinLikelihood's floor; 0: not sent (the vendor's default, 2).
	MinLikelihood map[domain.InputKind]int
	// Required is sent as required by the stages asked, a field expression
	// such as "work_email" per stage (several stages: joined by OR): a
	// match lacking it comes back as 404, free. A stage not in it takes
	// DefaultRequired's; "": nothing required for that stage.
	Required map[domain.Stage]string
	// BatchSize is the most questions one AskBulk takes (Caps().MaxBulk):
	// 1 to MaxBulk, default DefaultBatchSize (the vendor advises at most 80).
	BatchSize int
	// UserAgent is sent as User-Agent. Default "enrichq".
	UserAgent string
	// MaxResponseBytes bounds how much of an answer is read. Default 16 MiB;
	// a longer 200 answer is a transient error whose outcome is unknown.
	MaxResponseBytes int64
	// Now tells the time, to turn X-RateLimit-Reset into a wait. Default time.Now.
	Now func() time.Time
	// CreditsPerMatch is what a match costs by the price list (the vendors
	// file's prices: {match: n}); nil: CreditsPerMatch. The charge
	// header, when sent, is the truth of a call.
	CreditsPerMatch *int64
}

// Vendor is the adapter. It is safe for concurrent use.
type Vendor struct {
	name          string
	base          string // scheme://host[/path], without /v5 and without a trailing slash
	key           string
	call          *upstream.Caller
	minLikelihood map[domain.InputKind]int
	required      map[domain.Stage]string
	batch         int
	now           func() time.Time
	perMatch      int64
}

var _ enrich.Vendor = (*Vendor)(nil)

// String names the adapter without its API key.
func (v *Vendor) String() string { return "pdl.Vendor{" + v.name + " " + v.base + "}" }

// GoString is String.
func (v *Vendor) GoString() string { return v.String() }

// New validates cfg, fills its defaults and returns the adapter.
func New(cfg Config) (*Vendor, error) {
	base, err := enrich.ParseBaseURL(cfg.BaseURL, "pdl", "/v5")
	if err != nil {
		return nil, err
	}
	key, err := cfg.APIKey.Header("pdl")
	if err != nil {
		return nil, err
	}
	v := &Vendor{name: cfg.Name, base: base, key: key, batch: cfg.BatchSize, now: cfg.Now, perMatch: CreditsPerMatch,
		call: &upstream.Caller{HTTP: cfg.HTTPClient, UserAgent: cfg.UserAgent, MaxBody: cfg.MaxResponseBytes, Secret: key, Whole: upstream.OnlyOK}}
	if v.name == "" {
		v.name = DefaultName
	}
	if v.minLikelihood, err = minLikelihoods(cfg.MinLikelihood); err != nil {
		return nil, err
	}
	if v.required, err = requireds(cfg.Required); err != nil {
		return nil, err
	}
	switch {
	case v.batch == 0:
		v.batch = DefaultBatchSize
	case v.batch < 1 || v.batch > MaxBulk:
		return nil, fmt.Errorf("pdl: batch size %d: want 1 to %d", v.batch, MaxBulk)
	}
	if v.call.HTTP == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		v.call.HTTP = &http.Client{Timeout: DefaultTimeout, Transport: t}
	}
	v.call.HTTP = upstream.NoRedirects(v.call.HTTP)
	if v.call.UserAgent == "" {
		v.call.UserAgent = DefaultUserAgent
	}
	if v.call.MaxBody <= 0 {
		v.call.MaxBody = DefaultMaxResponseBytes
	}
	if v.now == nil {
		v.now = time.Now
	}
	if m := cfg.CreditsPerMatch; m != nil {
		if *m < 0 {
			return nil, fmt.Errorf("pdl: a match's price %d: want 0 or more", *m)
		}
		v.perMatch = *m
	}
	return v, nil
}

// Name is the vendor's configured name.
func (v *Vendor) Name() string { return v.name }

// Caps: every stage from any identity (a profile URL, an email, a person's
// name with a company or a domain), all filled by one match; no role
// search; bulk of BatchSize; one credit per match, a no-match free; 402 at
// zero; no idempotency keys.
func (v *Vendor) Caps() enrich.Caps {
	kinds := []domain.InputKind{domain.InputProfileURL, domain.InputEmail, domain.InputNameCompany, domain.InputNameDomain}
	return enrich.Caps{
		Stages: []domain.Stage{domain.StageProfile, domain.StageEmail, domain.StagePhone},
		Inputs: map[domain.Stage][]domain.InputKind{
			domain.StageProfile: kinds,
			domain.StageEmail:   kinds,
			domain.StagePhone:   kinds,
		},
		FillsAll: true,
		MaxBulk:  v.batch,
		Billing: enrich.Billing{
			Rules: map[domain.Stage]enrich.BillingRule{
				domain.StageProfile: enrich.BillPerMatch,
				domain.StageEmail:   enrich.BillPerMatch,
				domain.StagePhone:   enrich.BillPerMatch,
			},
			ChargeHeader:  headerCreditsSpent,
			BalanceHeader: headerRemaining,
			BlocksAtZero:  true,
			HonoursKeys:   domain.HonoursKeysFalse,
		},
	}
}

// Price: the price of a match (Config.CreditsPerMatch) whatever it holds, nothing for a miss;
// nothing for a question refused before the call.
func (v *Vendor) Price(q enrich.Question) enrich.Price {
	if v.refuse(endpointEnrich, q) != nil {
		return enrich.Price{}
	}
	return enrich.Price{Miss: 0, Hit: v.perMatch, Worst: v.perMatch}
}

// MaxCharge: the contract bills one match, single or bulk item, at
// CreditsPerMatch whatever it holds (vendor-pdl.md); a question refused
// before the call costs nothing.
func (v *Vendor) MaxCharge(q enrich.Question) int64 {
	if v.refuse(endpointEnrich, q) != nil {
		return 0
	}
	return CreditsPerMatch
}

// refuse is the error of a question this vendor cannot answer, before any
// call; nil for one it can.
func (v *Vendor) refuse(endpoint string, q enrich.Question) *enrich.Error {
	switch {
	case q.Role:
		return enrich.Refused(endpoint, "role_search_unsupported", "this vendor does not look people up by role title")
	case len(q.Stages) == 0:
		return enrich.Refused(endpoint, "invalid_stage", "no stage asked")
	}
	for _, s := range q.Stages {
		if !s.Valid() {
			return enrich.Refused(endpoint, "invalid_stage", fmt.Sprintf("unknown stage %q", enrich.Clip(string(s), 50)))
		}
	}
	if err := q.Query.Validate(); err != nil {
		return enrich.Refused(endpoint, "invalid_query", err.Error())
	}
	return nil
}

// Ask makes one GET /v5/person/enrich. A match answers every part its record
// holds, whatever stages q asked (they were paid for with it). The
// idempotency key is not sent: the vendor takes none.
func (v *Vendor) Ask(ctx context.Context, q enrich.Question, _ string) (enrich.Answer, error) {
	if e := v.refuse(endpointEnrich, q); e != nil {
		return enrich.Answer{}, e
	}
	u := v.base + pathEnrich + "?" + queryOf(v.params(q)).Encode()
	r, e := v.do(ctx, endpointEnrich, http.MethodGet, u, nil)
	if e != nil {
		return enrich.Answer{}, e
	}
	if r.answer == answerNoMatch {
		return enrich.Answer{Charge: r.charge.Or(0), RateLimit: r.rateLimit}, nil
	}
	f, err := decodeSingle(r.body)
	if err != nil {
		return enrich.Answer{}, v.malformed(endpointEnrich, r, err)
	}
	a := enrich.Answer{Charge: r.charge.Or(v.perMatch), RateLimit: r.rateLimit}
	if v.deliverable(q, f) {
		a.Profile, a.Email, a.Phones, a.ContactsHidden = f.profile, f.email, f.phones, f.hidden
	} else {
		a.WrongPerson = true
	}
	return a, nil
}

// params are the vendor's parameters of q: its identity, the floor of its
// input kind and the required expression of its stages.
func (v *Vendor) params(q enrich.Question) map[string]any {
	return params(q.Query, v.minLikelihood[q.Query.Kind()], requiredFor(v.required, q.Stages))
}

// deliverable reports whether a match is the person q asks for: for a
// lookup by name at a company, one who works there now (CurrentCompany).
// One who does not was billed, and is counted so, but is not delivered.
func (v *Vendor) deliverable(q enrich.Question, f found) bool {
	if k := q.Query.Kind(); k != domain.InputNameCompany && k != domain.InputNameDomain {
		return true // a profile URL or an email names the person: no company to check
	}
	return CurrentCompany(q.Query, f.data)
}

// AskBulk makes one POST /v5/person/bulk of the questions it can answer;
// one it cannot (a role title, an invalid query) gets a permanent per-item
// error and is not sent. With none to send, no call is made. Items are
// paired by the metadata the vendor echoes, never by position.
func (v *Vendor) AskBulk(ctx context.Context, qs []enrich.Question, _ string) (enrich.BulkAnswer, error) {
	if len(qs) > v.batch {
		return enrich.BulkAnswer{}, enrich.Refused(endpointBulk, "too_many_rows", fmt.Sprintf("%d questions, at most %d per call", len(qs), v.batch))
	}
	items := make([]enrich.BulkItem, len(qs))
	var ps []map[string]any
	var at []int // at[j] is the question that request j is
	for i, q := range qs {
		if e := v.refuse(endpointBulk, q); e != nil {
			items[i].Err = e
			continue
		}
		ps = append(ps, v.params(q))
		at = append(at, i)
	}
	if len(ps) == 0 {
		return enrich.BulkAnswer{Items: items}, nil
	}
	body, err := bulkBody(ps)
	if err != nil {
		return enrich.BulkAnswer{}, enrich.Refused(endpointBulk, "invalid_query", err.Error())
	}
	r, e := v.do(ctx, endpointBulk, http.MethodPost, v.base+pathBulk, body)
	if e != nil {
		return enrich.BulkAnswer{}, e
	}
	got, err := bulkItems(r.body, len(ps))
	if err != nil {
		return enrich.BulkAnswer{}, v.malformed(endpointBulk, r, err)
	}
	var estimate int64
	var hidden bool
	for j, it := range got {
		bi := enrich.BulkItem{Err: it.err}
		if it.billed && it.err == nil {
			if v.deliverable(qs[at[j]], it.found) {
				bi.Profile, bi.Email, bi.Phones = it.profile, it.email, it.phones
				hidden = hidden || it.hidden
			} else {
				bi.WrongPerson = true
			}
		}
		if it.billed || (it.err != nil && it.err.OutcomeUnknown) {
			bi.EstimatedCredits = v.perMatch
		}
		if bi.Err != nil {
			bi.Err.Redacted(v.key)
		}
		estimate += bi.EstimatedCredits
		items[at[j]] = bi
	}
	return enrich.BulkAnswer{Items: items, Charge: r.charge.Or(estimate), RateLimit: r.rateLimit, ContactsHidden: hidden}, nil
}

// response is an answer that is not an error: a 200 to decode, or a no-match.
type response struct {
	status    int
	body      []byte
	answer    answer
	charge    enrich.Charge // as the headers said
	rateLimit *enrich.RateLimit
}

// do makes one call and returns the answer, or the call's *enrich.Error.
func (v *Vendor) do(ctx context.Context, endpoint, method, u string, body []byte) (*response, *enrich.Error) {
	h := http.Header{}
	setRequestHeaders(h, v.key, body != nil)
	resp, err := v.call.Do(ctx, upstream.Request{Method: method, URL: u, Header: h, Body: body})
	if resp == nil {
		return nil, enrich.CallError(endpoint, err)
	}
	now := v.now()
	charge, rl := parseCharge(resp.Header), parseRateLimit(resp.Header, now)
	// http.Transport re-sends a GET after a reset of a reused connection.
	// Without idempotency keys the first send may have been billed too:
	// the call stays of unknown outcome until the balance header settles it.
	charge.Resent = resp.Resent
	if err != nil { // a 200 cut short or too long: the work was done, its result is lost
		return nil, enrich.CallFailed(enrich.CallError(endpoint, err), v.key, charge, rl)
	}
	ans, e := classify(endpoint, resp.Status, resp.Header, resp.Body, now)
	if e != nil {
		return nil, enrich.CallFailed(e, v.key, charge, rl)
	}
	return &response{status: resp.Status, body: resp.Body, answer: ans, charge: charge, rateLimit: rl}, nil
}

// The upstream call kit's errors (enrich.MalformedError and its kin), the
// key redacted.

func (v *Vendor) malformed(endpoint string, r *response, err error) *enrich.Error {
	return enrich.MalformedError(v.key, endpoint, r.status, r.charge, r.rateLimit, err)
}
