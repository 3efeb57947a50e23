package service

import (
	"context"
	"math"
	"slices"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/vendororder"
)

// MaxVendorSegments bounds the segments GET /v1/vendors lists: the most
// asked (a segment is an input kind and a country).
const MaxVendorSegments = 200

// Vendors is what GET /v1/vendors shows: the configured vendors, what each
// answered per segment and stage, and the automatic order of each segment
// for the usual stage sets.
type Vendors struct {
	// Order is the vendors file's order: "auto", or its list's names.
	Order []string `json:"order"`
	// Explore is the share of rows that ask another order.
	Explore float64 `json:"explore"`
	// PriorWeight is how many asks a prior counts for.
	PriorWeight float64      `json:"prior_weight"`
	Vendors     []VendorInfo `json:"vendors"`
	// Segments are the segments with answers, most asked first (at most
	// MaxVendorSegments), and each input kind's segment without a country.
	Segments []VendorSegment `json:"segments"`
	// Truncated: more segments have answers than are listed.
	Truncated bool `json:"truncated"`
}

// VendorInfo is one configured vendor.
type VendorInfo struct {
	Name         string         `json:"name"`
	Kind         string         `json:"kind"`
	CreditValue  int64          `json:"credit_value"`
	Rate         float64        `json:"rate"`
	Bulk         bool           `json:"bulk"`
	PriorHitRate float64        `json:"prior_hit_rate"`
	Stages       []domain.Stage `json:"stages"`
	FillsAll     bool           `json:"fills_all"`
}

// VendorSegment is one segment's rates and orders.
type VendorSegment struct {
	Segment string         `json:"segment"`
	Asked   int64          `json:"asked"`
	Rates   []VendorRate   `json:"rates"`
	Orders  []SegmentOrder `json:"orders"`
}

// VendorRate is one vendor's rate for a segment and stage.
type VendorRate struct {
	Vendor string       `json:"vendor"`
	Stage  domain.Stage `json:"stage"`
	// Asked, Found and Credits (its own credits) are observed.
	Asked   int64 `json:"asked"`
	Found   int64 `json:"found"`
	Credits int64 `json:"credits"`
	// P is the expected share of asks answered, the observed share blended
	// with the prior.
	P float64 `json:"p"`
	// ExpectedCharge is E, the expected charge of one ask in budget units.
	ExpectedCharge float64 `json:"expected_charge"`
	// ChargePerAnswer is E ÷ p; null when p is 0.
	ChargePerAnswer *float64 `json:"charge_per_answer"`
}

// SegmentOrder is the automatic order of a segment for a set of stages,
// and its expected charge per row in budget units.
type SegmentOrder struct {
	Stages         []domain.Stage `json:"stages"`
	Order          []string       `json:"order"`
	ExpectedCharge float64        `json:"expected_charge"`
}

// Vendors reports the configured vendors and what the automatic order
// learned of them (scope read). The rates are every tenant's: a vendor's
// answer rate on a kind of row is the same whoever asks.
func (s *Service) Vendors(ctx context.Context, p Principal) (Vendors, error) {
	if err := p.Require(domain.ScopeRead); err != nil {
		return Vendors{}, err
	}
	if p.Tenant == "" { // a key of no tenant sees nothing, the vendors neither
		return Vendors{}, ErrNoTenant
	}
	described, err := s.describedVendors()
	if err != nil {
		return Vendors{}, err
	}
	rates, err := s.store.VendorRates(ctx)
	if err != nil {
		return Vendors{}, err
	}
	m := vendororder.NewModel(described, rates, vendororder.DefaultPriorWeight)
	out := Vendors{Order: s.vendors.Order, Explore: s.vendors.Explore, PriorWeight: vendororder.DefaultPriorWeight,
		Vendors: []VendorInfo{}, Segments: []VendorSegment{}}
	if len(out.Order) == 0 {
		out.Order = []string{"auto"}
	}
	names := make([]string, 0, len(described))
	for i, spec := range s.vendors.List {
		caps := described[i].Caps
		out.Vendors = append(out.Vendors, VendorInfo{Name: spec.Name, Kind: string(spec.Kind), CreditValue: described[i].CreditValue,
			Rate: spec.Rate, Bulk: spec.Bulk, PriorHitRate: described[i].PriorHitRate, Stages: caps.Stages, FillsAll: caps.FillsAll})
		names = append(names, spec.Name)
	}
	segs := m.Segments()
	if len(segs) > MaxVendorSegments {
		segs, out.Truncated = segs[:MaxVendorSegments], true
	}
	for _, k := range []domain.InputKind{domain.InputProfileURL, domain.InputEmail, domain.InputNameCompany, domain.InputNameDomain} {
		g := domain.Segment{Kind: k}
		if !slices.ContainsFunc(segs, func(a vendororder.SegmentAsks) bool { return a.Segment == g }) {
			segs = append(segs, vendororder.SegmentAsks{Segment: g})
		}
	}
	for _, sa := range segs {
		out.Segments = append(out.Segments, vendorSegment(m, sa, names))
	}
	return out, nil
}

// describedVendors are the configured vendors as the order sees them, made
// once.
func (s *Service) describedVendors() ([]vendororder.Vendor, error) {
	s.describeOnce.Do(func() { s.described, s.describeErr = vendororder.FromSpecs(s.vendors.List) })
	return s.described, s.describeErr
}

// vendorSegment is one segment's rates and its orders for the usual stages.
func vendorSegment(m *vendororder.Model, sa vendororder.SegmentAsks, names []string) VendorSegment {
	vs := VendorSegment{Segment: sa.Segment.String(), Asked: sa.Asked, Rates: []VendorRate{}, Orders: []SegmentOrder{}}
	for _, name := range names {
		for _, st := range domain.Stages {
			e, ok := m.Estimate(name, sa.Segment, st)
			if !ok {
				continue
			}
			r := VendorRate{Vendor: name, Stage: st, Asked: e.Asked, Found: e.Found, Credits: e.Credits,
				P: round4(e.P), ExpectedCharge: round4(e.Charge)}
			if per := e.PerAnswer(); !math.IsInf(per, 0) {
				per = round4(per)
				r.ChargePerAnswer = &per
			}
			vs.Rates = append(vs.Rates, r)
		}
	}
	for _, stages := range vendororder.UsualStages {
		order, cost := m.Best(sa.Segment, stages, names)
		vs.Orders = append(vs.Orders, SegmentOrder{Stages: stages, Order: order, ExpectedCharge: round4(cost)})
	}
	return vs
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
