package enrich

import (
	"fmt"

	"github.com/enrichq/enrichq/internal/domain"
)

// CostTable is what each lookup costs in credits. The vendor's own
// X-Credits-Charged header is the truth when present; the table is used when it
// is absent, and to reserve credits before a call (Worst).
//
// The zero value is not useful: start from [DefaultCosts].
type CostTable struct {
	ProfileByURL    int64 // profile by profile_url, match or no match; default 1
	ProfileBySearch int64 // profile by name+company, name+domain or email, match or no match (the search was done); default 2
	EmailHit        int64 // email found, not verified; default 5
	EmailVerified   int64 // email found and verified; default 10
	EmailMiss       int64 // no email found; default 0
	PhoneHit        int64 // numbers found, none of them a mobile; default 5
	PhoneMobile     int64 // numbers found, a mobile among them; default 25
	PhoneMiss       int64 // no number found; default 0
}

// DefaultCosts is the vendor's published price list (profile 1-2, email 5-10,
// phone 5-25 credits).
func DefaultCosts() CostTable {
	return CostTable{
		ProfileByURL:    1,
		ProfileBySearch: 2,
		EmailHit:        5,
		EmailVerified:   10,
		EmailMiss:       0,
		PhoneHit:        5,
		PhoneMobile:     25,
		PhoneMiss:       0,
	}
}

// Validate returns an error if a cost is negative or every cost is zero (an
// unset table).
func (t CostTable) Validate() error {
	all := []int64{t.ProfileByURL, t.ProfileBySearch, t.EmailHit, t.EmailVerified, t.EmailMiss, t.PhoneHit, t.PhoneMobile, t.PhoneMiss}
	var sum int64
	for _, c := range all {
		if c < 0 {
			return fmt.Errorf("enrich: cost table: negative cost %d", c)
		}
		sum += c
	}
	if sum == 0 {
		return fmt.Errorf("enrich: cost table: every cost is zero")
	}
	return nil
}

// Worst is the most one lookup of stage s can cost (what to reserve before
// the call): by default profile 2, email 10, phone 25. Unknown stages cost 0.
func (t CostTable) Worst(s domain.Stage) int64 {
	switch s {
	case domain.StageProfile:
		return max(t.ProfileByURL, t.ProfileBySearch)
	case domain.StageEmail:
		return max(t.EmailHit, t.EmailVerified, t.EmailMiss)
	case domain.StagePhone:
		return max(t.PhoneHit, t.PhoneMobile, t.PhoneMiss)
	}
	return 0
}

// Best is the least one lookup of stage s can cost (for estimates): by
// default profile 1, email 0, phone 0 (a miss is free).
func (t CostTable) Best(s domain.Stage) int64 {
	switch s {
	case domain.StageProfile:
		return min(t.ProfileByURL, t.ProfileBySearch)
	case domain.StageEmail:
		return min(t.EmailHit, t.EmailVerified, t.EmailMiss)
	case domain.StagePhone:
		return min(t.PhoneHit, t.PhoneMobile, t.PhoneMiss)
	}
	return 0
}

// ProfileCost is what a profile lookup of the given kind (see
// [ProfileQuery.Kind]) costs; it is the same on a match and on a no-match.
// An invalid kind costs the worst case.
func (t CostTable) ProfileCost(kind domain.InputKind) int64 {
	switch kind {
	case domain.InputProfileURL:
		return t.ProfileByURL
	case domain.InputEmail, domain.InputNameCompany, domain.InputNameDomain:
		return t.ProfileBySearch
	}
	return t.Worst(domain.StageProfile)
}

// EmailCost is what an email lookup that answered e costs (nil: a miss).
func (t CostTable) EmailCost(e *Email) int64 {
	switch {
	case e == nil:
		return t.EmailMiss
	case e.Verified:
		return t.EmailVerified
	}
	return t.EmailHit
}

// PhoneCost is what a phone lookup that answered p costs (nil: a miss).
func (t CostTable) PhoneCost(p *Phones) int64 {
	switch {
	case p == nil || len(p.Numbers) == 0:
		return t.PhoneMiss
	case p.HasMobile():
		return t.PhoneMobile
	}
	return t.PhoneHit
}

// RowWorst is the most one bulk row can cost: its profile lookup plus the worst
// case of each stage in include.
func (t CostTable) RowWorst(q ProfileQuery, include []domain.Stage) int64 {
	c := t.ProfileCost(q.Kind())
	for _, s := range include {
		if s != domain.StageProfile {
			c += t.Worst(s)
		}
	}
	return c
}

// BulkWorst is the most a bulk call with these rows and stages can cost (the
// vendor bills a bulk call as the sum of its rows).
func (t CostTable) BulkWorst(rows []ProfileQuery, include []domain.Stage) int64 {
	var c int64
	for _, q := range rows {
		c += t.RowWorst(q, include)
	}
	return c
}

// BulkRowPrice is what one answered bulk row costs by prices: a row with a
// permanent error costs nothing, one whose outcome is unknown its worst case.
func BulkRowPrice(prices Prices, table CostTable, q ProfileQuery, include []domain.Stage, it BulkItem) int64 {
	if it.Err != nil {
		if !it.Err.OutcomeUnknown {
			return 0
		}
		if b, ok := prices.(*PriceBook); ok {
			return b.RowWorst(q, include)
		}
		return table.RowWorst(q, include)
	}
	var c int64
	for _, cl := range rowClasses(q, include, it) {
		p, _ := prices.Price(cl)
		c += p
	}
	return c
}
