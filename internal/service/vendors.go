package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
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
	PriorWeight float64 `json:"prior_weight"`
	// PoolWeight is the most asks the other tenants' answers (the pool)
	// count for in the tenant's rates.
	PoolWeight float64      `json:"pool_weight"`
	Vendors    []VendorInfo `json:"vendors"`
	// Segments are the segments the tenant's rows have answers in, most
	// asked first (at most
	// MaxVendorSegments), and each input kind's segment without a country.
	Segments []VendorSegment `json:"segments"`
	// Truncated: more segments have answers than are listed.
	Truncated bool `json:"truncated"`
	// Month is the first day (UTC) of the month of each vendor's Month.
	Month string `json:"month"`
	// Warnings say, in words, what may stop the tenant's jobs or cost more
	// than planned: the month's allowance nearly or fully used, a vendor
	// out of the waterfall.
	Warnings []string `json:"warnings"`
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
	// Month is what the calling tenant's calls to it cost this month.
	Month VendorSpend `json:"month"`
	// Out, when set, says the vendor is out of the tenant's waterfall now,
	// why and until when.
	Out *store.VendorOutage `json:"out"`
	// Key is what its answers said of its key (vendor_keys.go); null when
	// they said nothing.
	Key *VendorKey `json:"key"`
}

// VendorSpend is a tenant's calls to a vendor in a month: budget units
// spent (settled, and unknown outcomes at their worst case) and still
// reserved, and the spent units in the vendor's own credits (÷ its
// credit_value, rounded up).
type VendorSpend struct {
	Calls         int   `json:"calls"`
	Spent         int64 `json:"spent"`
	Reserved      int64 `json:"reserved"`
	VendorCredits int64 `json:"vendor_credits"`
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
// learned of them from the calling tenant's rows (scope read): the counts
// are the tenant's own; the rates and orders are those its rows are ordered
// by (its own answers, the priors, and the other tenants' by a bounded
// pull), never another tenant's counts.
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
	own, err := s.store.TenantVendorRates(ctx, p.Tenant)
	if err != nil {
		return Vendors{}, err
	}
	pool, err := s.store.VendorRates(ctx)
	if err != nil {
		return Vendors{}, err
	}
	m := vendororder.NewTenantModel(described, own, pool, vendororder.DefaultPriorWeight, vendororder.DefaultPoolWeight)
	now := s.now()
	spend, err := s.store.TenantVendorMonth(ctx, p.Tenant, now)
	if err != nil {
		return Vendors{}, err
	}
	outages, err := s.store.VendorsOut(ctx, p.Tenant)
	if err != nil {
		return Vendors{}, err
	}
	out := Vendors{Order: s.vendors.Order, Explore: s.vendors.Explore, PriorWeight: vendororder.DefaultPriorWeight, PoolWeight: vendororder.DefaultPoolWeight,
		Vendors: []VendorInfo{}, Segments: []VendorSegment{}, Month: store.MonthOf(now).Format(time.DateOnly), Warnings: []string{}}
	if len(out.Order) == 0 {
		out.Order = []string{"auto"}
	}
	names := make([]string, 0, len(described))
	// The orders shown are those auto uses now: a vendor out of the
	// tenant's waterfall is skipped until it is back, so it is left out of
	// them (and of their expected charge), unless every vendor is out.
	var ordered []string
	for i, spec := range s.vendors.List {
		caps := described[i].Caps
		info := VendorInfo{Name: spec.Name, Kind: string(spec.Kind), CreditValue: described[i].CreditValue,
			Rate: spec.Rate, Bulk: spec.Bulk, PriorHitRate: described[i].PriorHitRate, Stages: caps.Stages, FillsAll: caps.FillsAll}
		m := spend[spec.Name]
		info.Month = VendorSpend{Calls: m.Calls, Spent: m.Spent, Reserved: m.Reserved, VendorCredits: ceilDiv(m.Spent, max(info.CreditValue, 1))}
		for _, o := range outages {
			if o.Vendor == spec.Name {
				info.Out = &o
				out.Warnings = append(out.Warnings, fmt.Sprintf("%s is out of your waterfall until %s: %s.", o.Vendor,
					o.Until.UTC().Format("2006-01-02 15:04 UTC"), o.Reason))
			}
		}
		out.Vendors = append(out.Vendors, info)
		names = append(names, spec.Name)
		if info.Out == nil {
			ordered = append(ordered, spec.Name)
		}
	}
	if err := s.vendorKeys(ctx, &out); err != nil {
		return Vendors{}, err
	}
	w, err := s.allowanceWarning(ctx, p.Tenant)
	if err != nil {
		return Vendors{}, err
	}
	if w != "" {
		out.Warnings = append(out.Warnings, w)
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
	if len(ordered) == 0 {
		ordered = names
	}
	for _, sa := range segs {
		out.Segments = append(out.Segments, vendorSegment(m, sa, names, ordered))
	}
	return out, nil
}

// describedVendors are the configured vendors as the order sees them, made
// once.
func (s *Service) describedVendors() ([]vendororder.Vendor, error) {
	s.describeOnce.Do(func() { s.described, s.describeErr = vendororder.FromSpecs(s.vendors.List) })
	return s.described, s.describeErr
}

// vendorSegment is one segment's rates (of every vendor in names) and its
// orders for the usual stages (of the vendors in ordered).
func vendorSegment(m *vendororder.Model, sa vendororder.SegmentAsks, names, ordered []string) VendorSegment {
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
		order, cost := m.Best(sa.Segment, stages, ordered)
		vs.Orders = append(vs.Orders, SegmentOrder{Stages: stages, Order: order, ExpectedCharge: round4(cost)})
	}
	return vs
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// AllowanceWarnAt is the share of the month's allowance used from which the
// vendors' figures warn.
const AllowanceWarnAt = 0.8

// allowanceWarning says when the tenant's month has used AllowanceWarnAt of
// its allowance or all of it; "" otherwise, and without an allowance.
func (s *Service) allowanceWarning(ctx context.Context, tenant string) (string, error) {
	set, err := s.store.GetTenantSettings(ctx, tenant)
	if errors.Is(err, store.ErrNotFound) { // a tenant not yet stored has no allowance
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if set.MonthlyAllowance == nil {
		return "", nil
	}
	u, err := s.store.TenantMonth(ctx, tenant, s.now())
	if err != nil {
		return "", err
	}
	allowance, used := *set.MonthlyAllowance, u.Spent+u.Reserved
	switch {
	case used >= allowance:
		return fmt.Sprintf("This month's allowance is used up (%d of %d credits): jobs pause until next month or until it is raised.", used, allowance), nil
	case float64(used) >= AllowanceWarnAt*float64(allowance):
		return fmt.Sprintf("This month's allowance is %d %% used (%d of %d credits).", used*100/allowance, used, allowance), nil
	}
	return "", nil
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// StageAnswers is what one vendor answered for one stage of a job.
type StageAnswers = store.StageAnswers

// JobAnswers is who answered each stage of the tenant's job id: found and
// no-match rows by stage and vendor (scope read).
func (s *Service) JobAnswers(ctx context.Context, p Principal, id string) (_ []StageAnswers, err error) {
	defer func() { err = notFound("job", err) }()
	if err := p.Require(domain.ScopeRead); err != nil {
		return nil, err
	}
	job, err := s.store.GetJob(ctx, p.Tenant, id)
	if err != nil {
		return nil, err
	}
	return s.store.JobStageAnswers(ctx, job.ID)
}
