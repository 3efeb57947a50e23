package enrichtest

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
)

// Verifier is an in-process email verifier behind the adapter contract
// (enrich.Vendor), shaped like the third vendor's Email Verifier
// (../shared/vendor-hunter.md): it answers only the verify stage, for an
// email; its verdicts are valid, invalid, accept_all, webmail, disposable
// and unknown; a check is billed one credit except webmail, disposable and
// unknown, which are free; it may answer "still checking, ask again later"
// (its 202: enrich.ClassPending, not billed) before its verdict; it sends no
// credit headers, so the charge is its price list's. It stands in for the
// real adapter in the pipeline's tests.
type Verifier struct {
	name string
	// Verdict is the verdict on an address (lower-cased); nil: VerdictOf.
	Verdict func(addr string) enrich.EmailStatus
	// PendingFirst is how many asks of each address answer "still
	// checking" before the verdict.
	PendingFirst int
	// RetryAfter is what a "still checking" says of when to ask again.
	RetryAfter time.Duration
	// Quota, when above 0, is the verifications the month allows: once
	// that many are billed, every ask is refused as the vendor's 429
	// "usage limit reached" (enrich.ClassOutOfCredits, nothing billed).
	Quota int64

	mu     sync.Mutex
	asks   map[string]int
	billed int64
	calls  int64
	byStat map[enrich.EmailStatus]int64
}

// NewVerifier is a verifier named name, with VerdictOf's verdicts.
func NewVerifier(name string) *Verifier {
	return &Verifier{name: name, asks: map[string]int{}, byStat: map[enrich.EmailStatus]int64{}}
}

// VerdictOf is the default verdict on an address, by its local part's
// first word or its domain: "bad..." invalid; a domain starting "catchall"
// accept_all; gmail.com webmail; mailinator.com disposable; "unsure..."
// unknown; else valid.
func VerdictOf(addr string) enrich.EmailStatus {
	local, dom, _ := strings.Cut(strings.ToLower(addr), "@")
	switch {
	case strings.HasPrefix(local, "bad"):
		return enrich.StatusInvalid
	case strings.HasPrefix(dom, "catchall"):
		return enrich.StatusAcceptAll
	case dom == "gmail.com":
		return enrich.StatusWebmail
	case dom == "mailinator.com":
		return enrich.StatusDisposable
	case strings.HasPrefix(local, "unsure"):
		return enrich.StatusUnknown
	}
	return enrich.StatusValid
}

// VerifyPrice is what a verdict costs at the verifier, in its credits.
func VerifyPrice(s enrich.EmailStatus) int64 {
	switch s {
	case enrich.StatusWebmail, enrich.StatusDisposable, enrich.StatusUnknown:
		return 0
	}
	return 1
}

// Name is the verifier's configured name.
func (v *Verifier) Name() string { return v.name }

// Caps: the verify stage, from an email; billed per verdict by its kind.
func (v *Verifier) Caps() enrich.Caps {
	return enrich.Caps{
		Stages: []domain.Stage{domain.StageVerify},
		Inputs: map[domain.Stage][]domain.InputKind{domain.StageVerify: {domain.InputEmail}},
		Billing: enrich.Billing{Rules: map[domain.Stage]enrich.BillingRule{domain.StageVerify: enrich.BillPerField},
			HonoursKeys: domain.HonoursKeysFalse, BlocksAtZero: true},
	}
}

// Price: a verdict costs one credit or none.
func (v *Verifier) Price(enrich.Question) enrich.Price {
	return enrich.Price{Miss: 0, Hit: 0, Worst: 1}
}

// MaxCharge is one credit.
func (v *Verifier) MaxCharge(enrich.Question) int64 { return 1 }

// Ask verifies q.Query.Email.
func (v *Verifier) Ask(ctx context.Context, q enrich.Question, _ string) (enrich.Answer, error) {
	if err := ctx.Err(); err != nil {
		return enrich.Answer{}, &enrich.Error{Class: enrich.ClassTransient, Endpoint: "verify", Code: "canceled", Err: err}
	}
	if len(q.Stages) != 1 || q.Stages[0] != domain.StageVerify || q.Query.Kind() != domain.InputEmail {
		return enrich.Answer{}, &enrich.Error{Class: enrich.ClassPermanent, Endpoint: "verify", Code: "wrong_params",
			Message: "the verifier answers the verify stage of an email"}
	}
	addr := strings.ToLower(strings.TrimSpace(q.Query.Email))
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls++
	if v.Quota > 0 && v.billed >= v.Quota {
		return enrich.Answer{}, &enrich.Error{Class: enrich.ClassOutOfCredits, Endpoint: "verify", Status: 429, Code: "usage_limit_reached",
			Message: "the month's verifications are spent"}
	}
	v.asks[addr]++
	if v.asks[addr] <= v.PendingFirst {
		return enrich.Answer{}, &enrich.Error{Class: enrich.ClassPending, Endpoint: "verify", Status: 202,
			Message: "the verification is still running", RetryAfter: v.RetryAfter}
	}
	verdict := VerdictOf
	if v.Verdict != nil {
		verdict = v.Verdict
	}
	s := verdict(addr)
	price := VerifyPrice(s)
	v.billed += price
	v.byStat[s]++
	return enrich.Answer{Email: &enrich.Email{Address: addr, Status: s, Confidence: 0.9},
		Charge: enrich.Charge{Credits: price, Estimate: price}}, nil
}

// AskBulk: the verifier has no bulk endpoint.
func (v *Verifier) AskBulk(context.Context, []enrich.Question, string) (enrich.BulkAnswer, error) {
	return enrich.BulkAnswer{}, &enrich.Error{Class: enrich.ClassPermanent, Endpoint: "bulk", Code: "no_bulk", Message: "the verifier has no bulk endpoint"}
}

// Billed is what the verifier billed, in its credits: its usage counter.
func (v *Verifier) Billed() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.billed
}

// Calls counts the asks, "still checking" included.
func (v *Verifier) Calls() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.calls
}

// Asks counts the asks of addr.
func (v *Verifier) Asks(addr string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.asks[strings.ToLower(addr)]
}

// Verdicts counts the verdicts given, by status.
func (v *Verifier) Verdicts() map[enrich.EmailStatus]int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[enrich.EmailStatus]int64, len(v.byStat))
	for s, n := range v.byStat {
		out[s] = n
	}
	return out
}
