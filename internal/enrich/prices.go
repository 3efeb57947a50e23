package enrich

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
)

// PriceClass is a kind of answer the vendor prices alike: a stage, for the
// profile stage how it was looked up, and the outcome. The contract gives
// only ranges (profile 1-2, email 5-10, phone 5-25); within them a vendor
// may price a no-match below a match, or an email miss above 0, and only
// its answers (X-Credits-Charged) say so.
type PriceClass struct {
	Stage domain.Stage
	// Kind is how a profile was looked up (domain.InputProfileURL...); ""
	// for email and phone, which are looked up by the profile's URL.
	Kind    domain.InputKind
	Outcome Outcome
}

// Outcome is what a lookup found, as far as the price may hang on it.
type Outcome string

// Outcomes of a lookup.
const (
	OutcomeMatch    Outcome = "match"    // profile found
	OutcomeNoMatch  Outcome = "no_match" // profile not found (the search was done)
	OutcomeMiss     Outcome = "miss"     // email or phone: nothing found
	OutcomeHit      Outcome = "hit"      // an email not verified; numbers without a mobile
	OutcomeVerified Outcome = "verified" // a verified email
	OutcomeMobile   Outcome = "mobile"   // numbers with a mobile among them
)

// String is the class's name in the price list: "profile/name_company/no_match", "email/miss".
func (c PriceClass) String() string {
	if c.Kind == "" {
		return string(c.Stage) + "/" + string(c.Outcome)
	}
	return string(c.Stage) + "/" + string(c.Kind) + "/" + string(c.Outcome)
}

// Valid reports whether c is one of PriceClasses.
func (c PriceClass) Valid() bool { return slices.Contains(PriceClasses(), c) }

// ParsePriceClass reads a class's name (PriceClass.String).
func ParsePriceClass(s string) (PriceClass, error) {
	parts := strings.Split(s, "/")
	var c PriceClass
	switch len(parts) {
	case 2:
		c = PriceClass{Stage: domain.Stage(parts[0]), Outcome: Outcome(parts[1])}
	case 3:
		c = PriceClass{Stage: domain.Stage(parts[0]), Kind: domain.InputKind(parts[1]), Outcome: Outcome(parts[2])}
	}
	if !c.Valid() {
		return PriceClass{}, fmt.Errorf("enrich: %q is not a price class", s)
	}
	return c, nil
}

// profileKinds are the ways a profile is looked up at the vendor.
var profileKinds = []domain.InputKind{domain.InputProfileURL, domain.InputEmail, domain.InputNameCompany, domain.InputNameDomain}

// PriceClasses lists every class, profile first.
func PriceClasses() []PriceClass {
	var out []PriceClass
	for _, k := range profileKinds {
		out = append(out, PriceClass{domain.StageProfile, k, OutcomeMatch}, PriceClass{domain.StageProfile, k, OutcomeNoMatch})
	}
	for _, o := range []Outcome{OutcomeMiss, OutcomeHit, OutcomeVerified} {
		out = append(out, PriceClass{Stage: domain.StageEmail, Outcome: o})
	}
	for _, o := range []Outcome{OutcomeMiss, OutcomeHit, OutcomeMobile} {
		out = append(out, PriceClass{Stage: domain.StagePhone, Outcome: o})
	}
	return out
}

// ProfileClass is the class of a profile answer looked up by kind (found:
// a match).
func ProfileClass(kind domain.InputKind, found bool) PriceClass {
	o := OutcomeNoMatch
	if found {
		o = OutcomeMatch
	}
	return PriceClass{Stage: domain.StageProfile, Kind: kind, Outcome: o}
}

// EmailClass is the class of an email answer (nil: a miss).
func EmailClass(e *Email) PriceClass {
	c := PriceClass{Stage: domain.StageEmail, Outcome: OutcomeMiss}
	switch {
	case e == nil:
	case e.Verified:
		c.Outcome = OutcomeVerified
	default:
		c.Outcome = OutcomeHit
	}
	return c
}

// PhoneClass is the class of a phone answer (nil or no number: a miss).
func PhoneClass(p *Phones) PriceClass {
	c := PriceClass{Stage: domain.StagePhone, Outcome: OutcomeMiss}
	switch {
	case p == nil || len(p.Numbers) == 0:
	case p.HasMobile():
		c.Outcome = OutcomeMobile
	default:
		c.Outcome = OutcomeHit
	}
	return c
}

// Prices says what a class of answer costs. known is true when the vendor
// itself has shown that price; else credits is a guess (the cost table's).
type Prices interface {
	Price(c PriceClass) (credits int64, known bool)
}

// Price is the cost table's price of c: never known, a guess by the
// published list. A class the table does not know costs its stage's worst.
func (t CostTable) Price(c PriceClass) (int64, bool) {
	switch c.Stage {
	case domain.StageProfile:
		return t.ProfileCost(c.Kind), false
	case domain.StageEmail:
		switch c.Outcome {
		case OutcomeMiss:
			return t.EmailMiss, false
		case OutcomeHit:
			return t.EmailHit, false
		case OutcomeVerified:
			return t.EmailVerified, false
		}
	case domain.StagePhone:
		switch c.Outcome {
		case OutcomeMiss:
			return t.PhoneMiss, false
		case OutcomeHit:
			return t.PhoneHit, false
		case OutcomeMobile:
			return t.PhoneMobile, false
		}
	}
	return t.Worst(c.Stage), false
}

// LearnedPrice is what the vendor charges for one class, as its fresh
// answers showed.
type LearnedPrice struct {
	Class   PriceClass
	Credits int64 // the price now: the last one shown
	Highest int64 // the most the vendor has ever charged for the class
	Answers int64 // fresh answers that agree with Credits
	// Previous is the price before the last change (nil: never changed),
	// and ChangedAt when it changed.
	Previous  *int64
	ChangedAt time.Time
	LearnedAt time.Time // first seen
}

// PriceBook is the price list of one vendor account: what its answers
// showed, class by class, and a cost table for the classes it has not
// shown yet. It answers the prices wherever one must be inferred (a lost
// answer's replay, estimates) and the worst case a reservation holds. One
// book per vendor account: two vendors, or two plans of one, price apart.
// It is safe for concurrent use.
type PriceBook struct {
	table CostTable
	mu    sync.RWMutex
	known map[PriceClass]LearnedPrice
	// pending is, per class, a price shown that the known one is not (or
	// the first shown), and how many fresh answers in a row showed it: it
	// is learned at PriceAgreement.
	pending map[PriceClass]pendingPrice
	// equations are bulk calls not solved yet (SolveBulk).
	equations []bulkEquation
}

// NewPriceBook is a book over table (zero: DefaultCosts) that knows learned.
func NewPriceBook(table CostTable, learned []LearnedPrice) *PriceBook {
	if table == (CostTable{}) {
		table = DefaultCosts()
	}
	b := &PriceBook{table: table}
	b.Load(learned)
	return b
}

// PriceAgreement is how many fresh answers in a row must show a price
// before the book learns it, or changes to it: one answer, true or not (a
// vendor's mistake, someone in the middle), moves no price.
const PriceAgreement = 3

// pendingPrice is a price shown, not learned yet.
type pendingPrice struct {
	credits, answers int64
}

// Most is the most the contract lets an answer of class c cost: its
// stage's worst by the contract's price list (DefaultCosts), or by the
// book's table when that is more. A learned price, and the highest, stay within [0, Most].
func (b *PriceBook) Most(c PriceClass) int64 { return MostOf(b.table, c.Stage) }

// MostOf is the most one lookup of stage st may cost: its worst by the
// contract's price list (DefaultCosts), or by table when that is more.
func MostOf(table CostTable, st domain.Stage) int64 {
	return max(DefaultCosts().Worst(st), table.Worst(st))
}

// Load replaces what the book knows with learned (the shared list, read
// again from the database). A price beyond the contract's range (learned
// by an older version from an untrue charge) is left out, and a highest
// beyond it held to it.
func (b *PriceBook) Load(learned []LearnedPrice) {
	known := make(map[PriceClass]LearnedPrice, len(learned))
	for _, p := range learned {
		most := b.Most(p.Class)
		if p.Credits < 0 || p.Credits > most {
			continue
		}
		p.Highest = min(max(p.Highest, p.Credits), most)
		known[p.Class] = p
	}
	b.mu.Lock()
	b.known = known
	b.mu.Unlock()
}

// Table is the cost table the book falls back on.
func (b *PriceBook) Table() CostTable { return b.table }

// Price is the learned price of c when the vendor has shown one, else the
// cost table's (known false).
func (b *PriceBook) Price(c PriceClass) (int64, bool) {
	b.mu.RLock()
	p, ok := b.known[c]
	b.mu.RUnlock()
	if ok {
		return p.Credits, true
	}
	return b.table.Price(c)
}

// Learned is the book's learned prices, in PriceClasses order.
func (b *PriceBook) Learned() []LearnedPrice {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []LearnedPrice
	for _, c := range PriceClasses() {
		if p, ok := b.known[c]; ok {
			out = append(out, p)
		}
	}
	return out
}

// Observe records a fresh answer of class c charged credits. It says
// whether that is news to the book: a class not known before, or a price
// other than the one known (prev is then the old price), once
// PriceAgreement answers in a row have shown it; until then the price is
// pending and the book unchanged. An answer outside [0, Most(c)] teaches
// nothing. An agreeing answer is counted.
func (b *PriceBook) Observe(c PriceClass, credits int64, now time.Time) (news bool, prev *int64) {
	if credits < 0 || credits > b.Most(c) {
		return false, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.known[c]
	if !ok || p.Credits != credits {
		if b.pending == nil {
			b.pending = map[PriceClass]pendingPrice{}
		}
		pp := b.pending[c]
		if pp.credits != credits {
			pp = pendingPrice{credits: credits}
		}
		pp.answers++
		if pp.answers < PriceAgreement {
			b.pending[c] = pp
			return false, nil
		}
		delete(b.pending, c)
	} else {
		delete(b.pending, c)
	}
	switch {
	case !ok:
		p = LearnedPrice{Class: c, Credits: credits, Highest: credits, Answers: 1, LearnedAt: now}
		news = true
	case p.Credits != credits:
		old := p.Credits
		p.Previous, p.ChangedAt, p.Credits, p.Answers = &old, now, credits, 1
		p.Highest = max(p.Highest, credits)
		news, prev = true, &old
	default:
		p.Answers++
	}
	b.known[c] = p
	return news, prev
}

// Worst is the most one lookup of stage s may cost, what a reservation
// holds: over the stage's classes, the cost table's price or the highest
// the vendor has charged, whichever is more. Never below a price the
// vendor has shown; never below the table's either, whose prices are the
// contract's ranges.
func (b *PriceBook) Worst(s domain.Stage) int64 {
	var w int64
	for _, c := range PriceClasses() {
		if c.Stage == s {
			w = max(w, b.classWorst(c))
		}
	}
	return w
}

// classWorst is the most an answer of class c may cost: its table price,
// or the highest the vendor has charged for it.
func (b *PriceBook) classWorst(c PriceClass) int64 {
	w, _ := b.table.Price(c)
	b.mu.RLock()
	p, ok := b.known[c]
	b.mu.RUnlock()
	if ok {
		w = max(w, p.Highest)
	}
	return w
}

// ProfileRange is the least and most a profile lookup of kind may cost
// (no match or match), each learned or the table's.
func (b *PriceBook) ProfileRange(kind domain.InputKind) (lo, hi int64) {
	m, _ := b.Price(ProfileClass(kind, true))
	n, _ := b.Price(ProfileClass(kind, false))
	return min(m, n), max(m, n)
}

// Range is the least and most a lookup of stage s (email or phone) may
// cost, over its classes, each learned or the table's.
func (b *PriceBook) Range(s domain.Stage) (lo, hi int64) {
	first := true
	for _, c := range PriceClasses() {
		if c.Stage != s {
			continue
		}
		p, _ := b.Price(c)
		if first {
			lo, hi, first = p, p, false
			continue
		}
		lo, hi = min(lo, p), max(hi, p)
	}
	return lo, hi
}

// RowWorst is the most one bulk row can cost: its profile lookup (by its
// kind, match or not) plus the worst case of each stage in include.
func (b *PriceBook) RowWorst(q ProfileQuery, include []domain.Stage) int64 {
	c := b.Worst(domain.StageProfile)
	if k := q.Kind(); k != "" {
		c = max(b.classWorst(ProfileClass(k, true)), b.classWorst(ProfileClass(k, false)))
	}
	for _, s := range include {
		if s != domain.StageProfile {
			c += b.Worst(s)
		}
	}
	return c
}

// BulkWorst is the most a bulk call with these rows and stages can cost.
func (b *PriceBook) BulkWorst(rows []ProfileQuery, include []domain.Stage) int64 {
	var c int64
	for _, q := range rows {
		c += b.RowWorst(q, include)
	}
	return c
}
