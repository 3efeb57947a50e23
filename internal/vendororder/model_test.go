package vendororder

import (
	"math"
	"slices"
	"testing"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

var (
	profileOnly  = []domain.Stage{domain.StageProfile}
	profileEmail = []domain.Stage{domain.StageProfile, domain.StageEmail}
	nameDomainFR = domain.Segment{Kind: domain.InputNameDomain, Country: "fr"}
	nameDomainUS = domain.Segment{Kind: domain.InputNameDomain, Country: "us"}
)

// specs describes vendors as the vendors file would.
func specs(t *testing.T, ss ...config.VendorSpec) []Vendor {
	t.Helper()
	for i := range ss {
		ss[i].URL = "https://" + ss[i].Name + ".example"
		if ss[i].CreditValue == 0 {
			ss[i].CreditValue = 1
		}
	}
	vs, err := FromSpecs(ss)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func seedSpec(name string, prior float64, prices map[string]int64) config.VendorSpec {
	return config.VendorSpec{Name: name, Kind: config.VendorSeed, PriorHitRate: prior, Prices: prices}
}

func pdlSpec(name string, prior float64, match int64) config.VendorSpec {
	return config.VendorSpec{Name: name, Kind: config.VendorPDL, PriorHitRate: prior, Prices: map[string]int64{"match": match}}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-3 }

// One stage alone: the order is by expected charge per answer, E ÷ p (a
// per-call vendor's E is its price, hit or miss; a per-match vendor's is
// p × its price), and the waterfall's charge is Σ E_i × Π_{j<i} (1 − p_j),
// the least of every order's.
func TestOneStageOrdersByChargePerAnswer(t *testing.T) {
	vs := specs(t,
		seedSpec("v1", 0.5, map[string]int64{"profile_by_search": 2}), // E 2, E÷p 4
		seedSpec("v2", 0.2, map[string]int64{"profile_by_search": 1}), // E 1, E÷p 5
		seedSpec("v3", 0.9, map[string]int64{"profile_by_search": 3}), // E 3, E÷p 3.33
		pdlSpec("p", 0.5, 2), // E 0.5 × 2 = 1, E÷p 2
	)
	m := NewModel(vs, nil, 0)
	for name, want := range map[string]float64{"v1": 4, "v2": 5, "v3": 3.0 / 0.9, "p": 2} {
		e, ok := m.Estimate(name, nameDomainFR, domain.StageProfile)
		if !ok || !near(e.PerAnswer(), want) {
			t.Errorf("%s: E÷p = %v (%v); want %v", name, e.PerAnswer(), ok, want)
		}
	}
	candidates := []string{"v1", "v2", "v3", "p"}
	order, cost := m.Best(nameDomainFR, profileOnly, candidates)
	if want := []string{"p", "v3", "v1", "v2"}; !slices.Equal(order, want) {
		t.Fatalf("order = %v; want %v", order, want)
	}
	if want := 1 + 0.5*3 + 0.5*0.1*2 + 0.5*0.1*0.5*1; !near(cost, want) {
		t.Errorf("cost = %v; want %v", cost, want)
	}
	idx := []int{0, 1, 2, 3}
	for nextPermutation(idx) {
		perm := []string{candidates[idx[0]], candidates[idx[1]], candidates[idx[2]], candidates[idx[3]]}
		if c := m.Cost(nameDomainFR, profileOnly, perm); c < cost-1e-9 {
			t.Errorf("order %v costs %v, less than the chosen %v", perm, c, cost)
		}
	}
}

// A one-stage vendor A finds profiles cheaply (1 credit, 90%) and emails
// dearly (10 per email found, 50%, from the profile URL); a FillsAll vendor
// B finds a record for 60% of rows, each with its profile and email, for 4
// a match. For the profile alone A goes first (E÷p 1.1 against 4). Asked
// for the profile and the email together, B first is cheaper (4.6 against
// 6.82 a row): its record answers both for one charge, which ordering one
// stage at a time (A for the profile) never sees.
func TestFillsAllWeighsStagesTogether(t *testing.T) {
	vs := specs(t,
		seedSpec("a", 0.5, map[string]int64{"profile_by_search": 1, "email_hit": 10, "email_verified": 10}),
		pdlSpec("b", 0.5, 4),
	)
	const n = 1_000_000 // the priors weigh nothing beside this many answers
	rates := []store.VendorRate{
		{Vendor: "a", Segment: nameDomainFR, Stage: domain.StageProfile, Asked: n, Found: n * 9 / 10, Credits: n},
		{Vendor: "a", Segment: nameDomainFR, Stage: domain.StageEmail, Asked: n, Found: n / 2, Credits: 10 * n / 2},
		{Vendor: "b", Segment: nameDomainFR, Stage: domain.StageProfile, Asked: n, Found: n * 6 / 10},
		{Vendor: "b", Segment: nameDomainFR, Stage: domain.StageEmail, Asked: n, Found: n * 6 / 10},
	}
	m := NewModel(vs, rates, 0)
	if order, _ := m.Best(nameDomainFR, profileOnly, []string{"a", "b"}); !slices.Equal(order, []string{"a", "b"}) {
		t.Errorf("profile alone: order = %v; want [a b]", order)
	}
	order, cost := m.Best(nameDomainFR, profileEmail, []string{"a", "b"})
	if !slices.Equal(order, []string{"b", "a"}) || !near(cost, 4.6) {
		t.Errorf("profile and email: order = %v at %v; want [b a] at 4.6", order, cost)
	}
	if c := m.Cost(nameDomainFR, profileEmail, []string{"a", "b"}); !near(c, 6.82) {
		t.Errorf("profile and email, [a b]: cost = %v; want 6.82", c)
	}
}

// Before any answer the configured prior decides; a segment's answers
// then overrule it, and move the prior of the other segments of the kind
// (not of another kind).
func TestPriorsBeforeAnswers(t *testing.T) {
	vs := specs(t,
		seedSpec("x", 0.9, map[string]int64{"profile_by_search": 2}), // E÷p 2.2
		seedSpec("y", 0.3, map[string]int64{"profile_by_search": 1}), // E÷p 3.3
	)
	m := NewModel(vs, nil, 0)
	if e, _ := m.Estimate("x", nameDomainFR, domain.StageProfile); e.P != 0.9 || e.Charge != 2 || e.Asked != 0 {
		t.Errorf("x before answers = %+v; want the prior: p 0.9, E 2", e)
	}
	if order, _ := m.Best(nameDomainFR, profileOnly, []string{"y", "x"}); !slices.Equal(order, []string{"x", "y"}) {
		t.Errorf("by priors: order = %v; want [x y]", order)
	}
	m = NewModel(vs, []store.VendorRate{{Vendor: "x", Segment: nameDomainFR, Stage: domain.StageProfile, Asked: 1000, Found: 100, Credits: 2000}}, 0)
	if order, _ := m.Best(nameDomainFR, profileOnly, []string{"y", "x"}); !slices.Equal(order, []string{"y", "x"}) {
		t.Errorf("x finding 10%% of fr: order = %v; want [y x]", order)
	}
	if e, _ := m.Estimate("x", nameDomainUS, domain.StageProfile); e.P > 0.2 {
		t.Errorf("x on us, by the kind's answers: p = %v; want near 0.1", e.P)
	}
	email := domain.Segment{Kind: domain.InputEmail}
	if e, _ := m.Estimate("x", email, domain.StageProfile); e.P != 0.9 {
		t.Errorf("x on another kind: p = %v; want the prior 0.9", e.P)
	}
}

// A vendor that cannot answer the stages asked goes last, as do names not
// configured; the order is a permutation of the candidates.
func TestUselessVendorsLast(t *testing.T) {
	vs := specs(t, seedSpec("s", 0.5, nil), pdlSpec("p", 0.5, 1))
	m := NewModel(vs, nil, 0)
	member := domain.Segment{Kind: domain.InputMember}
	order, _ := m.Best(member, profileOnly, []string{"unknown", "s", "p"})
	if !slices.Equal(order, []string{"unknown", "s", "p"}) {
		t.Errorf("nobody answers: order = %v; want the candidates as given", order)
	}
	order, _ = m.Best(nameDomainFR, profileOnly, []string{"unknown", "s", "p"})
	if !slices.Equal(order, []string{"p", "s", "unknown"}) {
		t.Errorf("order = %v; want [p s unknown]", order)
	}
}

// The gauges cover the most asked segments only, at most the cap, each
// with every vendor and stage answerable there.
func TestGaugesBoundedToTheBusiestSegments(t *testing.T) {
	vs := specs(t, seedSpec("s", 0.5, nil), pdlSpec("p", 0.5, 1))
	var rates []store.VendorRate
	for i := range 40 {
		seg := domain.Segment{Kind: domain.InputNameDomain, Country: string(rune('a'+i/26)) + string(rune('a'+i%26))}
		rates = append(rates, store.VendorRate{Vendor: "s", Segment: seg, Stage: domain.StageProfile, Asked: int64(100 + i), Found: 50})
	}
	m := NewModel(vs, rates, 0)
	g := m.gaugeRates(32)
	segs := map[string]bool{}
	for _, r := range g {
		segs[r.Segment] = true
	}
	if len(segs) != 32 {
		t.Fatalf("%d segments exported; want 32", len(segs))
	}
	if segs["name_domain/aa"] || !segs["name_domain/bn"] {
		t.Errorf("exported %v; want the 32 most asked (not aa, the least)", segs)
	}
	// s: profile, email and phone (from the URL); p: all three.
	if len(g) != 32*6 {
		t.Errorf("%d series; want %d", len(g), 32*6)
	}
}

// A FillsAll vendor's match rate is that of the stages it was asked: a
// stage no job asked (the phone) is its prior alone, and does not make
// every call look like a billed match.
func TestMatchRateOfTheStagesAsked(t *testing.T) {
	vs := specs(t, pdlSpec("p", 0.5, 1))
	m := NewModel(vs, []store.VendorRate{
		{Vendor: "p", Segment: nameDomainFR, Stage: domain.StageProfile, Asked: 1000, Found: 100, Credits: 100},
		{Vendor: "p", Segment: nameDomainFR, Stage: domain.StageEmail, Asked: 1000, Found: 90},
	}, 0)
	e, _ := m.Estimate("p", nameDomainFR, domain.StageProfile)
	if e.Charge > 0.11 || e.Charge < 0.1 {
		t.Errorf("charge of a call = %v; want about 0.1 (a tenth of the calls match, at 1)", e.Charge)
	}
	if e, _ := m.Estimate("p", nameDomainUS, domain.StageProfile); e.Charge > 0.11 || e.Charge < 0.1 {
		t.Errorf("a segment never asked: charge %v; want about 0.1 (its kind's other segments)", e.Charge)
	}
	if e, _ := m.Estimate("p", domain.Segment{Kind: domain.InputEmail}, domain.StageProfile); !near(e.Charge, 0.5) {
		t.Errorf("a kind never asked: charge %v; want the prior's 0.5", e.Charge)
	}
}
