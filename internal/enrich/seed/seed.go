// Package seed is the adapter of the seed's vendor (vendor-api.md, section
// 1) behind enrich's [enrich.Vendor] contract: [Client] makes its calls
// (one HTTP call each, through the upstream call kit), [Vendor] answers the
// contract over it, and [Kind] builds it from a vendors-file entry (kind:
// seed; records kept without a kind are its own). Its wire (paths,
// parameters, headers, JSON shapes, status codes) is assumed in one file,
// wire.go, so adapting to the real vendor is a change of that file and of
// decode.go.
package seed

import (
	"context"
	"fmt"
	"slices"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
)

// Vendor is the seed's vendor behind the [enrich.Vendor] contract: a
// [*Client] under its configured name. The wire is the client's,
// unchanged: a single Ask is one of /v1/profile, /v1/email or /v1/phone by
// the question's stage; AskBulk is /v1/bulk with "include".
type Vendor struct {
	name    string
	c       API
	costs   enrich.CostTable
	book    *enrich.PriceBook
	honours domain.HonoursKeys
}

var (
	_ enrich.Vendor       = (*Vendor)(nil)
	_ enrich.PriceTeacher = (*Vendor)(nil)
	_ enrich.BulkBuyer    = (*Vendor)(nil)
	_ enrich.Endpoints    = (*Vendor)(nil)
	_ enrich.Records      = (*Vendor)(nil)
)

// API is the seed vendor's calls as [*Client] makes them: the seam a
// test wraps to lose, hold or fail answers under the adapter.
type API interface {
	Profile(ctx context.Context, q enrich.ProfileQuery, idempotencyKey string) (ProfileResult, error)
	Email(ctx context.Context, profileURL, idempotencyKey string) (EmailResult, error)
	Phone(ctx context.Context, profileURL, idempotencyKey string) (PhoneResult, error)
	Bulk(ctx context.Context, rows []enrich.ProfileQuery, include []domain.Stage, idempotencyKey string) (BulkResult, error)
}

// New is the seed adapter named name over c. honoursKeys is the
// configured Idempotency-Key behaviour ("" is auto).
func New(name string, c *Client, honoursKeys domain.HonoursKeys) *Vendor {
	s := NewOver(name, c, c.costs, honoursKeys)
	if b, ok := c.prices.(*enrich.PriceBook); ok {
		s.book = b // the client prices with it: one book for both
	}
	return s
}

// NewOver is the seed adapter named name over api (a [*Client], or a
// wrapper of one), priced by costs.
func NewOver(name string, api API, costs enrich.CostTable, honoursKeys domain.HonoursKeys) *Vendor {
	if honoursKeys == "" {
		honoursKeys = domain.HonoursKeysAuto
	}
	return &Vendor{name: name, c: api, costs: costs, book: enrich.NewPriceBook(costs, nil), honours: honoursKeys}
}

// Client is the client the adapter speaks through; nil when it speaks
// through another API.
func (s *Vendor) Client() *Client {
	c, _ := s.c.(*Client)
	return c
}

// Name is the vendor's configured name.
func (s *Vendor) Name() string { return s.name }

// Book is the price list the adapter's answers teach, class by class: the
// cost table (with the vendors file's prices) until an answer shows a
// price.
func (s *Vendor) Book() *enrich.PriceBook { return s.book }

// Caps: every stage; a profile from any input kind, email and phone from a
// profile URL; role searches; one stage per single call; bulk of
// MaxBulkRows; profile searches billed hit or miss, emails and phones by
// what is found; overage billed, never blocked.
func (s *Vendor) Caps() enrich.Caps {
	return enrich.Caps{
		Stages: []domain.Stage{domain.StageProfile, domain.StageEmail, domain.StagePhone},
		Inputs: map[domain.Stage][]domain.InputKind{
			domain.StageProfile: {domain.InputProfileURL, domain.InputEmail, domain.InputNameCompany, domain.InputNameDomain},
			domain.StageEmail:   {domain.InputProfileURL},
			domain.StagePhone:   {domain.InputProfileURL},
		},
		RoleSearch: true,
		MaxBulk:    enrich.MaxBulkRows,
		Billing: enrich.Billing{
			Rules: map[domain.Stage]enrich.BillingRule{
				domain.StageProfile: enrich.BillPerCall,
				domain.StageEmail:   enrich.BillPerField,
				domain.StagePhone:   enrich.BillPerField,
			},
			ChargeHeader:  headerCreditsCharged,
			BalanceHeader: headerCreditsRemaining,
			HonoursKeys:   s.honours,
			Replays:       enrich.ReplayZeroCharge,
		},
	}
}

// Price is q's cost by the client's cost table. A profile lookup costs the
// same hit or miss, and with it (a bulk row) the other stages cost what they
// find; alone, an email or a phone lookup costs nothing when missed.
func (s *Vendor) Price(q enrich.Question) enrich.Price {
	t := s.costs
	if q.Asks(domain.StageProfile) {
		c := t.ProfileCost(q.Query.Kind())
		p := enrich.Price{Miss: c, Hit: c, Worst: c}
		for _, st := range q.Stages {
			if st != domain.StageProfile {
				p.Hit += t.Best(st) // the profile found, this stage missed (or cheapest)
				p.Worst += t.Worst(st)
			}
		}
		return p
	}
	if len(q.Stages) != 1 {
		return enrich.Price{}
	}
	switch st := q.Stages[0]; st {
	case domain.StageEmail:
		return enrich.Price{Miss: t.EmailMiss, Hit: min(t.EmailHit, t.EmailVerified), Worst: t.Worst(st)}
	case domain.StagePhone:
		return enrich.Price{Miss: t.PhoneMiss, Hit: min(t.PhoneHit, t.PhoneMobile), Worst: t.Worst(st)}
	}
	return enrich.Price{}
}

// MaxCharge is the most the contract (vendor-api.md: profile 1-2, email
// 5-10, phone 5-25 credits; a bulk row the sum of its lookups) lets one
// answer to q cost: each stage asked at its contract's most, or at the
// configured price list's, whichever is more.
func (s *Vendor) MaxCharge(q enrich.Question) int64 {
	var n int64
	for _, st := range q.Stages {
		n += enrich.MostOf(s.costs, st) // the contract's most, or the configured price list's when more
	}
	return n
}

// Ask makes one single call for the one stage of q: /v1/profile with q's
// input, or /v1/email or /v1/phone with its profile URL.
func (s *Vendor) Ask(ctx context.Context, q enrich.Question, idempotencyKey string) (enrich.Answer, error) {
	if len(q.Stages) != 1 {
		return enrich.Answer{}, enrich.Refused(endpointOf(q), "one_stage_per_call", fmt.Sprintf("a single call answers one stage, %d asked", len(q.Stages)))
	}
	switch st := q.Stages[0]; st {
	case domain.StageProfile:
		r, err := s.c.Profile(ctx, q.Query, idempotencyKey)
		wrong := r.Profile != nil && !rightPerson(q.Query, r.Profile)
		if wrong {
			r.Profile = nil // billed as the search it was, not delivered
		}
		return enrich.Answer{Profile: r.Profile, Charge: r.Charge, RateLimit: r.RateLimit, WrongPerson: wrong}, err
	case domain.StageEmail, domain.StagePhone:
		if q.Query.Kind() != domain.InputProfileURL {
			return enrich.Answer{}, enrich.Refused(string(st), "invalid_query", "this vendor finds an "+string(st)+" from a profile URL only")
		}
		if st == domain.StageEmail {
			r, err := s.c.Email(ctx, q.Query.ProfileURL, idempotencyKey)
			return enrich.Answer{Email: r.Email, Charge: r.Charge, RateLimit: r.RateLimit}, err
		}
		r, err := s.c.Phone(ctx, q.Query.ProfileURL, idempotencyKey)
		return enrich.Answer{Phones: r.Phones, Charge: r.Charge, RateLimit: r.RateLimit}, err
	default:
		return enrich.Answer{}, enrich.Refused(endpointProfile, "invalid_stage", fmt.Sprintf("unknown stage %q", enrich.Clip(string(st), 50)))
	}
}

// AskBulk makes one /v1/bulk call: each question's input as a row, and the
// stages other than the profile as "include". A bulk call finds each row's
// profile first, so every question asks the profile stage, and the same
// stages (one include list per call); otherwise the call is refused.
func (s *Vendor) AskBulk(ctx context.Context, qs []enrich.Question, idempotencyKey string) (enrich.BulkAnswer, error) {
	rows := make([]enrich.ProfileQuery, len(qs))
	var include []domain.Stage
	for i, q := range qs {
		if !q.Asks(domain.StageProfile) {
			return enrich.BulkAnswer{}, enrich.Refused(endpointBulk, "invalid_include", "a bulk call finds the profile first: every question asks the profile stage")
		}
		if i == 0 {
			include = q.Stages
		} else if !sameStages(include, q.Stages) {
			return enrich.BulkAnswer{}, enrich.Refused(endpointBulk, "mixed_stages", "every question of a bulk call must ask the same stages")
		}
		rows[i] = q.Query
	}
	r, err := s.c.Bulk(ctx, rows, include, idempotencyKey)
	for i := range r.Items {
		it := &r.Items[i]
		if it.Profile != nil && !rightPerson(qs[i].Query, it.Profile) {
			// Someone else: nothing of theirs is delivered; what was bought
			// with them stays in the item's price.
			it.Profile, it.Email, it.Phones = nil, nil, nil
			it.WrongPerson = true
		}
		if it.Err != nil || it.Profile == nil {
			continue // the included stages were not looked up
		}
		for _, st := range include {
			if (st == domain.StageEmail && it.Email == nil) || (st == domain.StagePhone && it.Phones == nil) {
				it.Missed = append(it.Missed, st)
			}
		}
	}
	return enrich.BulkAnswer{Items: r.Items, Charge: r.Charge, RateLimit: r.RateLimit}, err
}

// rightPerson applies enrich's rule of the right person (WorksAt) to
// the seed's lookups by name at a domain: the record's company, and its
// company website or domain where the record carries one, must be the
// domain's company. Its other lookups pass: the seed's search by a company
// name is its own (of the people there now).
func rightPerson(q enrich.ProfileQuery, p *enrich.Profile) bool {
	if q.Kind() != domain.InputNameDomain {
		return true
	}
	return enrich.WorksAt(q, profileEmployer(p))
}

// Kind is the seed's kind.
func (s *Vendor) Kind() string { return string(Kind.Name) }

// Endpoint names the seed's paths: /v1/profile, /v1/email, /v1/phone,
// /v1/bulk.
func (s *Vendor) Endpoint(stage domain.Stage) string { return "/v1/" + string(stage) }

// BulkStages: a bulk call finds each row's profile and, for a row found,
// the email and phone wanted ("include").
func (s *Vendor) BulkStages(stage domain.Stage, wanted []domain.Stage) []domain.Stage {
	out := []domain.Stage{stage}
	if stage != domain.StageProfile {
		return out
	}
	for _, st := range []domain.Stage{domain.StageEmail, domain.StagePhone} {
		if slices.Contains(wanted, st) {
			out = append(out, st)
		}
	}
	return out
}

// BulkBill prices a /v1/bulk answer by book: each row its profile search
// (hit or miss), and for a row found each included stage by what it found.
func (s *Vendor) BulkBill(book *enrich.PriceBook, qs []enrich.Question, items []enrich.BulkItem) enrich.BulkBill {
	rows := make([]enrich.ProfileQuery, len(qs))
	var include []domain.Stage
	for i, q := range qs {
		rows[i] = q.Query
		if i == 0 {
			include = slices.DeleteFunc(slices.Clone(q.Stages), func(st domain.Stage) bool { return st == domain.StageProfile })
		}
	}
	b := enrich.BulkBill{Estimate: book.BulkPrice(rows, include, items), Split: map[domain.Stage]int64{}, Items: make([]map[domain.Stage]int64, len(items))}
	b.Classes, _ = enrich.BulkClasses(rows, include, items)
	for i, it := range items {
		if it.Err != nil || i >= len(rows) {
			continue
		}
		p, _ := book.Price(enrich.ProfileClass(rows[i].Kind(), it.Profile != nil))
		b.Split[domain.StageProfile] += p
		b.Items[i] = map[domain.Stage]int64{domain.StageProfile: p}
		if it.Profile == nil {
			continue
		}
		for _, st := range include {
			var class enrich.PriceClass
			switch st {
			case domain.StageEmail:
				class = enrich.EmailClass(it.Email)
			case domain.StagePhone:
				class = enrich.PhoneClass(it.Phones)
			default:
				continue
			}
			p, _ := book.Price(class)
			b.Split[st] += p
			b.Items[i][st] += p
		}
	}
	return b
}

func sameStages(a, b []domain.Stage) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	for _, s := range b {
		if !slices.Contains(a, s) {
			return false
		}
	}
	return true
}

// endpointOf names the endpoint a refused single question would have gone to.
func endpointOf(q enrich.Question) string {
	if len(q.Stages) == 1 && q.Stages[0].Valid() {
		return string(q.Stages[0])
	}
	return endpointProfile
}
