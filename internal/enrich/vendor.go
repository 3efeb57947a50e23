package enrich

import (
	"context"
	"slices"

	"github.com/enrichq/enrichq/internal/domain"
)

// Vendor is one enrichment vendor behind its adapter: the caller never sees
// its wire (paths, headers, JSON shapes, status codes, how it pairs bulk
// answers), only questions, answers, charges and classed errors.
//
// An adapter makes exactly one HTTP call per method call (or
// none, when it refuses the input before the call) and never retries:
// retries, backoff, rate limiting, reservations and the choice of the next
// vendor belong to the caller. Its errors are [*Error] with their [Class].
// An adapter is safe for concurrent use.
type Vendor interface {
	// Name is the vendor's configured name (the vendors file's `name`): it
	// names the vendor in results, the ledger and idempotency keys. Two
	// vendors of one kind have two names.
	Name() string
	// Caps says what the vendor answers and how it bills. It does not change
	// over the adapter's life.
	Caps() Caps
	// Price is what one Ask of q can cost by the vendor's configured price
	// list, in its own credits (not in budget units): what to reserve before
	// the call (Worst: the most one answer can cost) and what to expect of a
	// match and of a miss. A bulk item costs what an Ask of its question
	// would.
	Price(q Question) Price
	// MaxCharge is the most the vendor's contract lets one answer to q cost,
	// in its credits: one Ask of q, or one AskBulk item asking q (a bulk
	// call may cost the sum over its questions). The charge header is the
	// truth of a call only within [0, MaxCharge]: outside it, the caller
	// settles the call at the price list's price and marks the charge
	// disputed (docs/money.md). Never below Price(q).Worst.
	MaxCharge(q Question) int64
	// Ask makes one call: a single lookup of one input for the stages of q.
	// A no-match is an Answer with nil parts, not an error. A question the
	// vendor cannot answer (see Caps) is refused before any call with a
	// permanent error.
	Ask(ctx context.Context, q Question, idempotencyKey string) (Answer, error)
	// AskBulk makes one bulk call: Items[i] answers qs[i], paired by the
	// adapter by the vendor's own means (the seed's "index", pdl's
	// "metadata"), never by position in the vendor's answer. Only when
	// Caps().MaxBulk > 0, with at most MaxBulk questions; more is refused
	// before any call. The returned error is the whole call's (no item is
	// then known); each item's own outcome is in its Err.
	AskBulk(ctx context.Context, qs []Question, idempotencyKey string) (BulkAnswer, error)
}

// Caps is what a vendor can answer, and how it bills.
type Caps struct {
	// Stages are the stages it answers, in domain.Stages order.
	Stages []domain.Stage
	// Inputs are the input kinds it takes, per stage: the seed finds an
	// email or a phone only from a profile URL (the one its profile stage
	// found), pdl from any identity.
	Inputs map[domain.Stage][]domain.InputKind
	// RoleSearch: it answers "a role title at a company" (Question.Role):
	// the seed does, pdl does not (a role is not an identity there).
	RoleSearch bool
	// FillsAll: one match answers every stage it has data for, for one
	// charge (pdl: a person record carries the profile, the email and the
	// phones). Without it one Ask answers exactly one stage.
	FillsAll bool
	// MaxBulk is the most questions one AskBulk takes; 0: no bulk endpoint.
	MaxBulk int
	// Billing is how it bills and what it does out of credits.
	Billing Billing
}

// Answers reports whether the vendor can answer stage s for an input of
// kind k (role says the input's name is a role title).
func (c Caps) Answers(s domain.Stage, k domain.InputKind, role bool) bool {
	if role && !c.RoleSearch {
		return false
	}
	return slices.Contains(c.Stages, s) && slices.Contains(c.Inputs[s], k)
}

// BillingRule says which answers of a stage a vendor bills.
type BillingRule string

// The billing rules.
const (
	// BillPerCall: every answered lookup is billed, match or no match (the
	// seed's profile search: the search was done).
	BillPerCall BillingRule = "per_call"
	// BillPerMatch: a match is billed, at one price whatever it holds; a
	// no-match is free (pdl: 1 credit per 200, a 404 costs nothing).
	BillPerMatch BillingRule = "per_match"
	// BillPerField: only what is found is billed, priced by what it is (the
	// seed's email and phone: a verified email or a mobile costs more, a
	// miss nothing).
	BillPerField BillingRule = "per_field"
)

// Billing is how a vendor bills, and how it says so.
type Billing struct {
	// Rules is the rule of each stage it answers.
	Rules map[domain.Stage]BillingRule
	// ChargeHeader is the response header carrying what a call cost
	// (seed X-Credits-Charged, pdl X-Call-Credits-Spent): read into
	// Charge.Credits with Charge.Reported set. Without it the adapter
	// charges its price list.
	ChargeHeader string
	// BalanceHeader is the response header carrying the credits left on the
	// key (seed X-Credits-Remaining, pdl X-TotalLimit-Remaining): read into
	// Charge.Remaining; a witness that settles calls of unknown outcome.
	BalanceHeader string
	// BlocksAtZero: out of credits, the vendor refuses calls (pdl: 402,
	// [ClassOutOfCredits], nothing billed) rather than billing overage (the
	// seed: it keeps answering; only enrichq's budgets stop the spend).
	BlocksAtZero bool
	// HonoursKeys: whether the vendor honours Idempotency-Key, so that a
	// resent call is replayed free (seed: as configured, auto learns it;
	// pdl: false, it takes no key: a resent call is billed again).
	HonoursKeys domain.HonoursKeys
	// Replays is how the vendor's answers show a replay of an earlier send
	// of their key ("" : they never do, a resent call is a fresh one).
	Replays ReplaySignal
}

// ReplaySignal is how a vendor's answer says it replays an earlier send.
type ReplaySignal string

// The replay signals.
const (
	// ReplayNone: answers are never replays.
	ReplayNone ReplaySignal = ""
	// ReplayZeroCharge: a replay is charged 0 by the charge header for an
	// answer priced above 0, and Charge.Replayed (Idempotent-Replayed:
	// true) confirms it where sent (the seed).
	ReplayZeroCharge ReplaySignal = "zero_charge"
)

// Rule is the billing rule of stage s ("" for a stage the vendor does not answer).
func (b Billing) Rule(s domain.Stage) BillingRule { return b.Rules[s] }

// Price is what one question costs at a vendor by its configured price
// list, in the vendor's credits. The vendor's charge header, when sent, is
// the truth of a call; these are for reservations and expectations.
type Price struct {
	// Miss is what a call that finds nothing costs (0 where misses are free).
	Miss int64
	// Hit is the least a call that finds something costs.
	Hit int64
	// Worst is the most the call can cost, whatever it finds: what to
	// reserve before it.
	Worst int64
}

// Question is what one Ask (or one item of an AskBulk) asks a vendor.
type Question struct {
	// Query is the row's identity (a profile URL, an email, a name with a
	// company or a domain), or, for a later stage at a vendor that finds
	// emails and phones by profile URL (the seed), the profile URL an
	// earlier stage found. Normalised by the caller; sent as given.
	Query ProfileQuery
	// Stages are what this call should answer. Without Caps().FillsAll,
	// exactly one stage per Ask; in an AskBulk every question asks the same
	// stages (the profile is implied at the seed: its bulk finds the
	// profile, then the stages included).
	Stages []domain.Stage
	// Role says Query.Name is a role title ("VP Sales"), not a person's name.
	// Only a vendor with Caps().RoleSearch takes it.
	Role bool
}

// Asks reports whether q asks stage s.
func (q Question) Asks(s domain.Stage) bool { return slices.Contains(q.Stages, s) }

// Answer is a vendor's answer to one Ask. A part is nil when it was not
// found or not asked; a vendor that FillsAll may set parts it was not asked
// for (its match held them, and they were paid for with it).
type Answer struct {
	Profile *Profile
	Email   *Email
	Phones  *Phones
	// Charge is what the call cost, as the vendor's charge header said, or
	// by the adapter's price list when it said nothing.
	Charge Charge
	// RateLimit is what the vendor said of its rate limit; nil when nothing.
	RateLimit *RateLimit
	// ContactsHidden: the match held contact fields the key's plan hides
	// (a Free plan's true/false in place of an email or a phone). They are
	// not answers: the email and phone stages fall through to the next
	// vendor, and the caller warns that the key's plan hides contact data.
	ContactsHidden bool
	// WrongPerson: the vendor matched (and billed) someone who is not the
	// person asked for (WorksAt: a former employee, a namesake); nothing
	// of theirs is in the answer.
	WrongPerson bool
}

// Found reports whether the answer holds anything.
func (a Answer) Found() bool { return a.Profile != nil || a.Email != nil || a.Phones != nil }

// BulkAnswer is a vendor's answer to one AskBulk: Items[i] answers the
// i-th question. Each item's EstimatedCredits is its share of Charge by the
// vendor's price list (worst case when its outcome is unknown).
type BulkAnswer struct {
	Items     []BulkItem
	Charge    Charge
	RateLimit *RateLimit
	// ContactsHidden: some item's match held contact fields the key's plan
	// hides (see [Answer].ContactsHidden).
	ContactsHidden bool
}

// The optional capabilities of an adapter. The caller finds them by
// interface assertion on these interfaces, never on an adapter's type: an
// adapter without one is the common case it describes.

// PriceTeacher is an adapter whose answers teach its price list class by
// class (a single answer's Charge.Class): the caller keeps its book in step
// with what every worker learned, reserves the book's worst, prices an
// answer whose charge the vendor did not report by it, and recognises an
// answer charged 0 for a class not priced yet. An adapter without it is
// priced by its Price alone.
type PriceTeacher interface {
	// Book is the adapter's price list: its cost table (with the vendors
	// file's prices) until answers show prices.
	Book() *PriceBook
	// BulkBill prices a bulk call's items by book (qs are the call's
	// questions).
	BulkBill(book *PriceBook, qs []Question, items []BulkItem) BulkBill
}

// BulkBill is a bulk call's answer priced by a price list, in credits.
type BulkBill struct {
	// Estimate is what the call's items cost: the call's charge when the
	// vendor did not report it.
	Estimate int64
	// Split is Estimate by the stage each part of it bought: the ledger's
	// "what did the job cost, by stage" of a call that bought several.
	Split map[domain.Stage]int64
	// Items is Split item by item (Items[i] prices qs[i]; nil for an item
	// not billed): what each stage of each row cost, so that the learned
	// order prices each stage by what it bought (a profile search is not
	// charged the emails bought in the same call).
	Items []map[domain.Stage]int64
	// Classes counts the price classes the items were billed for, to learn
	// prices from the call's total; nil when an item's outcome is unknown.
	Classes map[PriceClass]int64
}

// BulkBuyer is an adapter whose bulk call for one stage buys later stages
// with it, for the rows that stage answers (the seed's bulk "include"):
// each item then answers or misses (BulkItem.Missed) them too.
type BulkBuyer interface {
	// BulkStages are the stages a bulk call asking stage buys, of those
	// wanted: stage first. Only stage when it buys nothing more.
	BulkStages(stage domain.Stage, wanted []domain.Stage) []domain.Stage
}

// Endpoints is an adapter that names its endpoints in the ledger and the
// metrics by its own paths ("/v1/profile"); without it an endpoint is the
// vendor's name and the stage ("pdl:profile", "pdl:bulk").
type Endpoints interface {
	// Endpoint names the endpoint a single call of stage goes to, or, for
	// domain.StageBulk, a bulk call.
	Endpoint(stage domain.Stage) string
}

// Records is an adapter that says which kind of vendor it is (Kind.Name):
// its answers' records are kept in the cache with that kind, and read back
// by the kind's Kind.ReadProfile.
type Records interface {
	Kind() string
}

// BalanceReader is an adapter whose answers carry no balance header
// (Billing.BalanceHeader empty) but whose vendor tells a key's usage on a
// call of its own (the third vendor's GET /v2/account, free): that reading
// is its balance witness. Balance makes that one call; it bills nothing.
type BalanceReader interface {
	// Balance is the key's balance as the vendor counts it now:
	// Charge.Remaining in the adapter's credits (RemainingReported set), the
	// same credits its answers are priced in.
	Balance(ctx context.Context) (Charge, error)
}

// MaxBulkRows is the most rows one bulk call takes at any vendor (the
// seed's /v1/bulk, assumed): a kind's Caps.MaxBulk is at most it, and the
// processor's bulk size is bounded by it.
const MaxBulkRows = 100
