// Package enrich speaks to the enrichment vendors. [Vendor] is the contract
// every vendor's adapter answers (what it can answer, how it bills, its
// questions and answers); the shared words live here too: the query
// ([ProfileQuery]), the answers ([Profile], [Email], [Phones]), what a call
// cost ([Charge]), the classes of failed calls ([Error], [Class]), the
// price classes and books ([CostTable], [PriceBook]), the records an
// answer is kept as (records.go), and the registry of kinds ([Kind]).
//
// Each vendor's adapter is a package of its own, with its wire in a file of
// its own: internal/enrich/seed, internal/enrich/pdl, internal/enrich/hunter;
// internal/enrich/vendors registers them. Every adapter makes exactly one
// HTTP call per method call, through the upstream call kit
// (internal/upstream), and never retries: retries, backoff and rate
// limiting belong to the caller, which decides with [Error.Class],
// [Error.RetryAfter] and [Error.OutcomeUnknown].
package enrich

import (
	"encoding/json"
	"strings"

	"github.com/enrichq/enrichq/internal/domain"
)

// ProfileQuery is the input of a profile lookup: exactly one of ProfileURL,
// Email, Name together with Company, or Name together with Domain is set.
// Name may be a person's name or a role title such as "VP Sales"; Domain is
// the company's website host name (acme.com). The client sends the values as
// given: normalising them is the caller's job.
type ProfileQuery struct {
	ProfileURL string
	Name       string
	Company    string
	Domain     string
	Email      string
}

// Kind is [domain.InputProfileURL], [domain.InputEmail],
// [domain.InputNameCompany] or [domain.InputNameDomain] for a valid query,
// and "" for one that sets none or more than one of the inputs (see
// [ProfileQuery.Validate]).
func (q ProfileQuery) Kind() domain.InputKind {
	url, email := set(q.ProfileURL), set(q.Email)
	name, company, dom := set(q.Name), set(q.Company), set(q.Domain)
	switch {
	case url && !email && !name && !company && !dom:
		return domain.InputProfileURL
	case email && !url && !name && !company && !dom:
		return domain.InputEmail
	case name && company && !dom && !url && !email:
		return domain.InputNameCompany
	case name && dom && !company && !url && !email:
		return domain.InputNameDomain
	}
	return ""
}

// Validate returns an error unless exactly one input of q is set (Name goes
// with Company or with Domain, and needs one of them). Values that are only
// blanks count as unset.
func (q ProfileQuery) Validate() error {
	if q.Kind() != "" {
		return nil
	}
	url, email := set(q.ProfileURL), set(q.Email)
	name, company, dom := set(q.Name), set(q.Company), set(q.Domain)
	if !url && !email {
		switch {
		case company && dom:
			return errString("profile query: give company or domain, not both")
		case name != (company || dom):
			return errString("profile query: a name goes with a company or a domain")
		}
	}
	return errString("profile query: set exactly one of profile URL, email, name with company, or name with domain")
}

func set(s string) bool { return strings.TrimSpace(s) != "" }

type errString string

func (e errString) Error() string { return string(e) }

// Profile is a matched profile. Every field but ProfileURL may be empty: the
// vendor may leave any of them out, send null, or send a type we do not
// expect (then the field is empty here and the value stays in Raw).
//
// The Raw of a Profile, an Email or Phones, when set, is valid JSON: this
// package's decoders set it only to what they decoded, and users of the
// values rely on it (they store it as jsonb without checking it again). A
// value built elsewhere must keep that promise or leave Raw empty.
type Profile struct {
	ProfileURL     string
	Name           string
	Headline       string
	Company        string
	Role           string
	Location       string
	CompanySize    string
	Industry       string
	Technographics []string
	// Raw is the record exactly as received, unknown fields included.
	Raw json.RawMessage
}

// Email is a found email address.
type Email struct {
	Address    string
	Confidence float64 // 0.0 to 1.0 as the vendor said; 0 when absent
	Verified   bool
	// Status is a verifier's verdict on Address (the verify stage's answer);
	// "" when the address was not verified.
	Status EmailStatus
	// Raw is the answer exactly as received, unknown fields included.
	Raw json.RawMessage
}

// EmailStatus is a verifier's verdict on an address.
type EmailStatus string

// The verdicts. Only StatusInvalid is known not to be deliverable; the
// others are delivered with their status for the buyer to weigh.
const (
	StatusValid      EmailStatus = "valid"
	StatusInvalid    EmailStatus = "invalid"
	StatusAcceptAll  EmailStatus = "accept_all" // a catch-all domain: the address cannot be proven
	StatusWebmail    EmailStatus = "webmail"
	StatusDisposable EmailStatus = "disposable"
	StatusUnknown    EmailStatus = "unknown"
)

// Phone is one phone number of a profile.
type Phone struct {
	Number  string // as received, normally E.164 ("+14155550100")
	Type    string // "mobile", "direct" or "office" as the vendor said; may be empty
	Country string // ISO 3166 alpha-2 as the vendor said; may be empty
}

// HasMobile reports whether one of the numbers is a mobile (the expensive kind).
func (p *Phones) HasMobile() bool {
	if p == nil {
		return false
	}
	for _, n := range p.Numbers {
		if strings.EqualFold(n.Type, "mobile") {
			return true
		}
	}
	return false
}

// Phones are the numbers found for a profile (at least one).
type Phones struct {
	Numbers []Phone
	// Raw is a JSON object whose "phones" member is the list exactly as
	// received (from /v1/phone: the whole answer, unknown fields included;
	// from /v1/bulk: {"phones": <the row's list>}).
	Raw json.RawMessage
}

// Charge is what a call cost, in the vendor's credits: as the vendor said in
// its charge header (the seed's X-Credits-Charged, [Billing].ChargeHeader),
// or, when that header was absent, as the adapter's price list estimates it.
type Charge struct {
	Credits           int64
	Reported          bool  // Credits came from the charge header
	Remaining         int64 // the balance header (X-Credits-Remaining at the seed; negative in overage)
	RemainingReported bool  // the balance header was present
	// Replayed: the vendor answered from its Idempotency-Key store
	// (Idempotent-Replayed: true): this send was free, and an earlier send
	// with the same key, whose answer enrichq lost, was the one billed.
	Replayed bool
	// Resent: http.Transport sent the request twice (a reused connection
	// was reset): the first send may be the one billed.
	Resent bool
	// Estimate is the price of the answer (what Credits is when the vendor
	// does not report it): what the billed earlier send of a replayed answer
	// cost. Priced by the client's [Prices]: learned, else the cost table.
	Estimate int64
	// Class is the answer's price class (single lookups; zero for bulk).
	Class PriceClass
	// Overage is how the balance splits into purchased credits and the
	// overage allowance, where the vendor says so (pdl's
	// X-TotalLimit-Purchased-Remaining and X-TotalLimit-Overages-Remaining);
	// nil when it does not.
	Overage *Overage
}

// Or is the charge the vendor reported, else estimate (the answer's price
// by the adapter's list); Estimate is set to estimate either way.
func (c Charge) Or(estimate int64) Charge {
	c.Estimate = estimate
	if !c.Reported {
		c.Credits = estimate
	}
	return c
}

// Overage is a key's balance split as the vendor reports it: credits still
// bought and paid for, and overage credits (billed afterwards, at the
// overage rate) still allowed. Purchased at 0 means what the key is
// charged now is overage.
type Overage struct {
	PurchasedRemaining int64
	OveragesRemaining  int64
}

// InOverage reports whether the key's purchased credits are spent, so that
// what it is charged now is overage.
func (o *Overage) InOverage() bool { return o != nil && o.PurchasedRemaining <= 0 }

// RateLimit is what the vendor said of its rate limit in X-RateLimit-*
// headers. Absent headers leave their field at -1.
type RateLimit struct {
	Limit     int64 // X-RateLimit-Limit
	Remaining int64 // X-RateLimit-Remaining
	ResetIn   int64 // X-RateLimit-Reset: seconds until the window resets
	// Window is the length in seconds of the fixed window Limit and
	// Remaining count (pdl: a minute): at Remaining 0 no call passes until
	// it ends. 0: not a fixed window (a token bucket refills call by call),
	// or not known.
	Window int64
}

// BulkItem answers one row of a bulk call (a [BulkAnswer]'s Items).
type BulkItem struct {
	Profile *Profile // nil = no match, or Err is set
	Email   *Email   // nil = not asked, no profile, or no match
	Phones  *Phones  // nil = not asked, no profile, or no match
	// Err is this row's own error, else nil. The vendor's per-row errors are
	// permanent for that row (bad input) unless their code says otherwise; a
	// row the vendor did not answer (missing or duplicate index, a result
	// that does not parse) gets a transient error with OutcomeUnknown set.
	Err *Error
	// Missed are the stages the item's question asked beyond its first that
	// the vendor looked up and did not find: each a no-match. A stage asked
	// neither answered nor missed was not looked up (the seed looks the
	// included stages up only for a row whose profile it found).
	Missed []domain.Stage
	// EstimatedCredits is this row's price (learned, else the cost table's;
	// the worst case when Err.OutcomeUnknown). The vendor reports only the call's total, so this
	// is the way to share the call's Charge among rows.
	EstimatedCredits int64
	// WrongPerson: as Answer's, for this row.
	WrongPerson bool
}
