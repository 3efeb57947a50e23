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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
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
	APIKey string
	// HTTPClient makes the calls. Default: Timeout 30s and up to 64 idle
	// connections to the vendor. Whatever its CheckRedirect, no redirect is
	// followed.
	HTTPClient *http.Client
	// MinLikelihood (1-10) is sent as min_likelihood: weaker matches come
	// back as 404, free. 0: not sent (the vendor's default).
	MinLikelihood int
	// Required is sent as required, a field expression such as
	// "work_email": a match lacking it comes back as 404, free. "": not sent.
	Required string
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
}

// String prints the configuration without the API key.
func (c Config) String() string {
	return fmt.Sprintf("pdl.Config{Name: %q, BaseURL: %q, APIKey: %s}", c.Name, c.BaseURL, redactedKey(c.APIKey))
}

// GoString is String, so that %#v does not print the API key either.
func (c Config) GoString() string { return c.String() }

// LogValue logs the configuration without the API key.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", c.Name), slog.String("base_url", c.BaseURL), slog.String("api_key", redactedKey(c.APIKey)))
}

func redactedKey(k string) string {
	if k == "" {
		return "(none)"
	}
	return "[REDACTED]"
}

// Vendor is the adapter. It is safe for concurrent use.
type Vendor struct {
	name          string
	base          string // scheme://host[/path], without /v5 and without a trailing slash
	key           string
	hc            *http.Client
	minLikelihood int
	required      string
	batch         int
	ua            string
	maxBody       int64
	now           func() time.Time
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
	key := strings.TrimSpace(cfg.APIKey)
	if key == "" {
		return nil, errors.New("pdl: API key is required")
	}
	if strings.IndexFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return nil, errors.New("pdl: API key holds blanks or control characters")
	}
	v := &Vendor{name: cfg.Name, base: base, key: key, hc: cfg.HTTPClient, minLikelihood: cfg.MinLikelihood,
		required: strings.TrimSpace(cfg.Required), batch: cfg.BatchSize, ua: cfg.UserAgent, maxBody: cfg.MaxResponseBytes, now: cfg.Now}
	if v.name == "" {
		v.name = DefaultName
	}
	if v.minLikelihood < 0 || v.minLikelihood > 10 {
		return nil, fmt.Errorf("pdl: min_likelihood %d: want 1 to 10, or 0 for the vendor's default", v.minLikelihood)
	}
	switch {
	case v.batch == 0:
		v.batch = DefaultBatchSize
	case v.batch < 1 || v.batch > MaxBulk:
		return nil, fmt.Errorf("pdl: batch size %d: want 1 to %d", v.batch, MaxBulk)
	}
	if v.hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		v.hc = &http.Client{Timeout: DefaultTimeout, Transport: t}
	}
	v.hc = enrich.NoRedirects(v.hc)
	if v.ua == "" {
		v.ua = DefaultUserAgent
	}
	if v.maxBody <= 0 {
		v.maxBody = DefaultMaxResponseBytes
	}
	if v.now == nil {
		v.now = time.Now
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

// Price: CreditsPerMatch for a match whatever it holds, nothing for a miss;
// nothing for a question refused before the call.
func (v *Vendor) Price(q enrich.Question) enrich.Price {
	if v.refuse(endpointEnrich, q) != nil {
		return enrich.Price{}
	}
	return enrich.Price{Miss: 0, Hit: CreditsPerMatch, Worst: CreditsPerMatch}
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
		return refused(endpoint, "role_search_unsupported", "this vendor does not look people up by role title")
	case len(q.Stages) == 0:
		return refused(endpoint, "invalid_stage", "no stage asked")
	}
	for _, s := range q.Stages {
		if !s.Valid() {
			return refused(endpoint, "invalid_stage", fmt.Sprintf("unknown stage %q", enrich.Clip(string(s), 50)))
		}
	}
	if err := q.Query.Validate(); err != nil {
		return refused(endpoint, "invalid_query", err.Error())
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
	u := v.base + pathEnrich + "?" + queryOf(params(q.Query, v.minLikelihood, v.required)).Encode()
	r, e := v.do(ctx, endpointEnrich, http.MethodGet, u, nil)
	if e != nil {
		return enrich.Answer{}, e
	}
	if r.answer == answerNoMatch {
		return enrich.Answer{Charge: r.chargeOr(0), RateLimit: r.rateLimit}, nil
	}
	f, err := decodeSingle(r.body)
	if err != nil {
		return enrich.Answer{}, v.malformed(endpointEnrich, r, err)
	}
	return enrich.Answer{Profile: f.profile, Email: f.email, Phones: f.phones, Charge: r.chargeOr(CreditsPerMatch), RateLimit: r.rateLimit}, nil
}

// AskBulk makes one POST /v5/person/bulk of the questions it can answer;
// one it cannot (a role title, an invalid query) gets a permanent per-item
// error and is not sent. With none to send, no call is made. Items are
// paired by the metadata the vendor echoes, never by position.
func (v *Vendor) AskBulk(ctx context.Context, qs []enrich.Question, _ string) (enrich.BulkAnswer, error) {
	if len(qs) > v.batch {
		return enrich.BulkAnswer{}, refused(endpointBulk, "too_many_rows", fmt.Sprintf("%d questions, at most %d per call", len(qs), v.batch))
	}
	items := make([]enrich.BulkItem, len(qs))
	var ps []map[string]string
	var at []int // at[j] is the question that request j is
	for i, q := range qs {
		if e := v.refuse(endpointBulk, q); e != nil {
			items[i].Err = e
			continue
		}
		ps = append(ps, params(q.Query, v.minLikelihood, v.required))
		at = append(at, i)
	}
	if len(ps) == 0 {
		return enrich.BulkAnswer{Items: items}, nil
	}
	body, err := bulkBody(ps)
	if err != nil {
		return enrich.BulkAnswer{}, refused(endpointBulk, "invalid_query", err.Error())
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
	for j, it := range got {
		bi := enrich.BulkItem{Profile: it.profile, Email: it.email, Phones: it.phones, Err: it.err}
		if it.billed || (it.err != nil && it.err.OutcomeUnknown) {
			bi.EstimatedCredits = CreditsPerMatch
		}
		if bi.Err != nil {
			v.redact(bi.Err)
		}
		estimate += bi.EstimatedCredits
		items[at[j]] = bi
	}
	return enrich.BulkAnswer{Items: items, Charge: r.chargeOr(estimate), RateLimit: r.rateLimit}, nil
}

// response is an answer that is not an error: a 200 to decode, or a no-match.
type response struct {
	status    int
	body      []byte
	answer    answer
	charge    enrich.Charge // as the headers said
	rateLimit *enrich.RateLimit
}

// chargeOr is the charge the vendor reported, else estimate by the price list.
func (r *response) chargeOr(estimate int64) enrich.Charge {
	ch := r.charge
	ch.Estimate = estimate
	if !ch.Reported {
		ch.Credits = estimate
	}
	return ch
}

// do makes one call and returns the answer, or the call's *enrich.Error.
func (v *Vendor) do(ctx context.Context, endpoint, method, u string, body []byte) (*response, *enrich.Error) {
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
		return nil, v.redact(&enrich.Error{Class: enrich.ClassPermanent, Endpoint: endpoint, Code: "invalid_request", Message: "cannot build the request: " + enrich.ErrText(err), Err: err})
	}
	setRequestHeaders(req.Header, v.key, body != nil)
	req.Header.Set("User-Agent", v.ua)

	resp, err := v.hc.Do(req)
	if err != nil {
		return nil, v.transportError(endpoint, 0, err, sent.Load())
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, v.maxBody+1))
	_ = resp.Body.Close()
	now := v.now()
	charge, rl := parseCharge(resp.Header), parseRateLimit(resp.Header, now)
	// http.Transport re-sends a GET after a reset of a reused connection.
	// Without idempotency keys the first send may have been billed too:
	// the call stays of unknown outcome until the balance header settles it.
	charge.Resent = writes.Load() > 1
	fail := func(e *enrich.Error) *enrich.Error {
		if charge.Resent {
			e.OutcomeUnknown = true
		}
		e.Charge = errorCharge(charge, e)
		e.RateLimit = rl
		return v.redact(e)
	}
	ok := resp.StatusCode == http.StatusOK
	switch {
	case err != nil && ok: // the answer was cut: the work was done, its result is lost
		return nil, fail(v.transportError(endpoint, resp.StatusCode, err, true))
	case int64(len(data)) > v.maxBody && ok:
		return nil, fail(&enrich.Error{Class: enrich.ClassTransient, Endpoint: endpoint, Status: resp.StatusCode, Code: "response_too_large",
			Message: fmt.Sprintf("answer longer than %d bytes", v.maxBody), OutcomeUnknown: true})
	}
	ans, e := classify(endpoint, resp.StatusCode, resp.Header, data, now)
	if e != nil {
		return nil, fail(e)
	}
	return &response{status: resp.StatusCode, body: data, answer: ans, charge: charge, rateLimit: rl}, nil
}

// transportError is a call that got no (complete) answer: a timeout, a reset,
// a refused connection, a canceled context. Its outcome is unknown when the
// request was written.
func (v *Vendor) transportError(endpoint string, status int, err error, sent bool) *enrich.Error {
	e := &enrich.Error{Class: enrich.ClassTransient, Endpoint: endpoint, Status: status, Code: "network_error", Message: enrich.ErrText(err), OutcomeUnknown: sent, Err: err}
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		e.Code = "canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		e.Code = "timeout"
	}
	return v.redact(e)
}

// malformed is a 200 whose body does not parse: the vendor did the work (and
// may have billed it), its result is lost.
func (v *Vendor) malformed(endpoint string, r *response, err error) *enrich.Error {
	e := &enrich.Error{Class: enrich.ClassTransient, Endpoint: endpoint, Status: r.status, Code: "malformed_response", Message: enrich.ErrText(err),
		OutcomeUnknown: true, RateLimit: r.rateLimit, Err: err}
	e.Charge = errorCharge(r.charge, e)
	return v.redact(e)
}

// errorCharge is what an error answer says it cost: nil when it said
// nothing (the reservation is then counted, outcome unknown, or released).
// A call of unknown outcome is settled only by X-Call-Credits-Spent; the
// balance alone would settle it at 0.
func errorCharge(ch enrich.Charge, e *enrich.Error) *enrich.Charge {
	if ch.Reported || (ch.RemainingReported && !e.OutcomeUnknown) {
		return &ch
	}
	return nil
}

// refused is a call refused before it was made (bad input): permanent, free.
func refused(endpoint, code, msg string) *enrich.Error {
	return &enrich.Error{Class: enrich.ClassPermanent, Endpoint: endpoint, Code: code, Message: msg}
}

// redact removes the API key from the text of e (the vendor may echo it).
func (v *Vendor) redact(e *enrich.Error) *enrich.Error {
	e.Code = strings.ReplaceAll(e.Code, v.key, "[REDACTED]")
	e.Message = strings.ReplaceAll(e.Message, v.key, "[REDACTED]")
	return e
}
