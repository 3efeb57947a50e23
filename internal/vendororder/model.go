package vendororder

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/metrics"
	"github.com/enrichq/enrichq/internal/store"
)

// MaxEnumerated is the most vendors whose every order is priced (5! = 120
// orders); with more, the order is by each vendor's charge per answer of
// the first stage it answers.
const MaxEnumerated = 5

// maxCached bounds the orders a model keeps: segments are kinds ×
// countries, stage sets few, candidate lists few; past this the cache
// starts again.
const maxCached = 4096

// Model is the vendors' observed rates at one time, and the orders they
// make. It does not change once made, but for its cache of orders, which
// is safe for concurrent use.
type Model struct {
	list    []*Vendor
	vendors map[string]*Vendor
	weight  float64
	bySeg   map[segKey]counts
	byKind  map[kindKey]counts
	// pool is the other tenants' counts per segment (the pool less the
	// tenant's own), pulled in as at most poolWeight asks (pulled).
	pool       map[segKey]counts
	poolWeight float64

	mu    sync.Mutex
	cache map[string]choice
}

// choice is the cheapest order of a query: its useful vendors first (those
// that can answer a stage asked), then the others in configured order.
type choice struct {
	order  []string
	useful int
	cost   float64
}

// NewModel is the model of vendors with the observed rates (summed per
// vendor, segment and stage); priorWeight is how many asks a prior counts
// for (0: DefaultPriorWeight).
func NewModel(vendors []Vendor, rates []store.VendorRate, priorWeight float64) *Model {
	return NewTenantModel(vendors, rates, nil, priorWeight, 0)
}

// NewTenantModel is the model of one tenant's rows: its own observed rates
// (own), the configured priors, and the pool's rates (every tenant's,
// including own, which is taken out of them) pulled in as at most
// poolWeight asks per segment and stage (0: none), so that other tenants'
// rows move the tenant's order by a bounded amount (docs/vendors.md, "Per
// tenant").
func NewTenantModel(vendors []Vendor, own, pool []store.VendorRate, priorWeight, poolWeight float64) *Model {
	if priorWeight <= 0 {
		priorWeight = DefaultPriorWeight
	}
	m := &Model{vendors: map[string]*Vendor{}, weight: priorWeight, bySeg: map[segKey]counts{}, byKind: map[kindKey]counts{},
		pool: map[segKey]counts{}, poolWeight: max(poolWeight, 0), cache: map[string]choice{}}
	for i := range vendors {
		v := vendors[i]
		if v.CreditValue < 1 {
			v.CreditValue = 1
		}
		m.list = append(m.list, &v)
		m.vendors[v.Name] = &v
	}
	for _, r := range own {
		k := segKey{r.Vendor, r.Segment, r.Stage}
		c := m.bySeg[k]
		c.add(r)
		m.bySeg[k] = c
		kk := kindKey{r.Vendor, r.Segment.Kind, r.Stage}
		c = m.byKind[kk]
		c.add(r)
		m.byKind[kk] = c
	}
	if m.poolWeight > 0 {
		for _, r := range pool {
			k := segKey{r.Vendor, r.Segment, r.Stage}
			c := m.pool[k]
			c.add(r)
			m.pool[k] = c
		}
		for k, c := range m.pool {
			o := m.bySeg[k]
			c = counts{asked: max(c.asked-o.asked, 0), found: max(c.found-o.found, 0), credits: max(c.credits-o.credits, 0)}
			c.found = min(c.found, c.asked)
			if c.asked == 0 {
				delete(m.pool, k)
				continue
			}
			m.pool[k] = c
		}
	}
	return m
}

// Estimate is vendor's estimate for seg and stage st; false for a vendor
// not configured or a stage it cannot answer for seg's rows.
func (m *Model) Estimate(vendor string, seg domain.Segment, st domain.Stage) (Estimate, bool) {
	v := m.vendors[vendor]
	if v == nil {
		return Estimate{}, false
	}
	if _, ok := question(v, seg.Kind, st); !ok {
		return Estimate{}, false
	}
	return m.estimate(v, seg, st), true
}

// SegmentAsks is a segment with observed answers, and how many asks.
type SegmentAsks struct {
	Segment domain.Segment
	Asked   int64
}

// Segments are the segments with observed answers, most asked first.
func (m *Model) Segments() []SegmentAsks {
	sums := map[domain.Segment]int64{}
	for k, c := range m.bySeg {
		sums[k.seg] += c.asked
	}
	out := make([]SegmentAsks, 0, len(sums))
	for s, n := range sums {
		out = append(out, SegmentAsks{s, n})
	}
	slices.SortFunc(out, func(a, b SegmentAsks) int {
		return cmp.Or(cmp.Compare(b.Asked, a.Asked), cmp.Compare(a.Segment.String(), b.Segment.String()))
	})
	return out
}

// gaugeRates are the estimates of the most asked segments, at most
// maxSegments of them, for every vendor and stage it answers there.
func (m *Model) gaugeRates(maxSegments int) []metrics.VendorRate {
	segs := m.Segments()
	segs = segs[:min(len(segs), maxSegments)]
	var out []metrics.VendorRate
	for _, s := range segs {
		for _, v := range m.list {
			for _, st := range domain.Stages {
				if e, ok := m.Estimate(v.Name, s.Segment, st); ok {
					out = append(out, metrics.VendorRate{Vendor: v.Name, Segment: s.Segment.String(), Stage: string(st),
						HitRate: e.P, ExpectedCharge: e.Charge})
				}
			}
		}
	}
	return out
}

// Cost is the expected charge per row, in budget units, of asking the
// vendors of order (a waterfall) for stages, for a row of seg.
func (m *Model) Cost(seg domain.Segment, stages []domain.Stage, order []string) float64 {
	var plans []*plan
	for _, name := range order {
		if v := m.vendors[name]; v != nil {
			plans = append(plans, m.plan(v, seg))
		}
	}
	return waterfallCost(plans, maskOf(stages), seg.Kind)
}

// Best is the order of candidates with the least expected charge per row
// for stages and a row of seg, and that charge. Vendors that answer none of
// the stages (or are not configured) come last, in the order given.
func (m *Model) Best(seg domain.Segment, stages []domain.Stage, candidates []string) ([]string, float64) {
	c := m.best(seg, stages, candidates)
	return slices.Clone(c.order), c.cost
}

func (m *Model) best(seg domain.Segment, stages []domain.Stage, candidates []string) choice {
	need := maskOf(stages)
	var key strings.Builder
	key.WriteString(seg.String())
	key.WriteByte('|')
	key.WriteByte('0' + need)
	for _, c := range candidates {
		key.WriteByte('|')
		key.WriteString(c)
	}
	m.mu.Lock()
	c, ok := m.cache[key.String()]
	m.mu.Unlock()
	if ok {
		return c
	}
	c = m.choose(seg, need, candidates)
	m.mu.Lock()
	if len(m.cache) >= maxCached {
		clear(m.cache)
	}
	m.cache[key.String()] = c
	m.mu.Unlock()
	return c
}

// choose prices every order of the useful candidates (up to
// MaxEnumerated) and keeps the cheapest; on a tie, the one nearer the
// configured order.
func (m *Model) choose(seg domain.Segment, need uint8, candidates []string) choice {
	var useful []*plan
	var rest []string
	for _, name := range candidates {
		v := m.vendors[name]
		if v == nil || need == 0 {
			rest = append(rest, name)
			continue
		}
		if p := m.plan(v, seg); (p.direct|p.viaURL)&need != 0 {
			useful = append(useful, p)
		} else {
			rest = append(rest, name)
		}
	}
	var best []*plan
	cost := 0.0
	if len(useful) <= MaxEnumerated {
		idx := make([]int, len(useful))
		for i := range idx {
			idx[i] = i
		}
		perm := make([]*plan, len(useful))
		for first := true; ; first = false {
			for i, j := range idx {
				perm[i] = useful[j]
			}
			if c := waterfallCost(perm, need, seg.Kind); first || c < cost-1e-9 {
				best, cost = slices.Clone(perm), c
			}
			if !nextPermutation(idx) {
				break
			}
		}
	} else {
		best = slices.Clone(useful)
		slices.SortStableFunc(best, func(a, b *plan) int { return cmp.Compare(a.perAnswer(need), b.perAnswer(need)) })
		cost = waterfallCost(best, need, seg.Kind)
	}
	order := make([]string, 0, len(candidates))
	for _, p := range best {
		order = append(order, p.name)
	}
	return choice{order: append(order, rest...), useful: len(best), cost: cost}
}

// nextPermutation steps idx to its next permutation in lexicographic
// order; false after the last.
func nextPermutation(idx []int) bool {
	i := len(idx) - 2
	for i >= 0 && idx[i] >= idx[i+1] {
		i--
	}
	if i < 0 {
		return false
	}
	j := len(idx) - 1
	for idx[j] <= idx[i] {
		j--
	}
	idx[i], idx[j] = idx[j], idx[i]
	slices.Reverse(idx[i+1:])
	return true
}

// stageIndex is a stage's bit in a mask: profile 0, email 1, phone 2.
func stageIndex(s domain.Stage) int { return slices.Index(domain.Stages, s) }

func maskOf(stages []domain.Stage) uint8 {
	var m uint8
	for _, s := range stages {
		if i := stageIndex(s); i >= 0 {
			m |= 1 << i
		}
	}
	return m
}

const profileBit = 1

// plan is one vendor's numbers for one segment, as the waterfall prices
// them.
type plan struct {
	name     string
	fillsAll bool
	// direct: the stages it answers from the row's input; viaURL: those it
	// answers from the profile URL a profile stage found.
	direct, viaURL uint8
	p              [3]float64 // answer rate per stage
	e              [3]float64 // expected charge of an ask of one stage (one-stage vendors)
	match          float64    // FillsAll: the share of calls that find a record
	callE          [8]float64 // FillsAll: expected charge of a call asking a mask's stages
}

func (m *Model) plan(v *Vendor, seg domain.Segment) *plan {
	p := &plan{name: v.Name, fillsAll: v.Caps.FillsAll}
	for i, st := range domain.Stages {
		switch {
		case v.Caps.Answers(st, seg.Kind, false):
			p.direct |= 1 << i
		case st != domain.StageProfile && v.Caps.Answers(st, domain.InputProfileURL, false):
			p.viaURL |= 1 << i
		default:
			continue
		}
		e := m.estimate(v, seg, st)
		p.p[i], p.e[i] = e.P, e.Charge
	}
	if p.fillsAll {
		p.match = m.matchRate(v, seg)
		for mask := uint8(1); mask < 8; mask++ {
			var stages []domain.Stage
			for i, st := range domain.Stages {
				if mask&(1<<i) != 0 {
					stages = append(stages, st)
				}
			}
			kind := seg.Kind
			if mask&p.direct != mask { // asked with the profile URL found
				kind = domain.InputProfileURL
			}
			price := v.Price(enrich.Question{Query: enrich.SampleQuery(kind), Stages: stages})
			p.callE[mask] = float64(v.CreditValue) * charge(price, p.match)
		}
	}
	return p
}

// answers are the stages it can be asked, the profile URL known or not.
func (p *plan) answers(urlKnown bool) uint8 {
	if urlKnown {
		return p.direct | p.viaURL
	}
	return p.direct
}

// perAnswer is E ÷ p of the first stage of need it answers (the order of
// many vendors, where every order is not priced).
func (p *plan) perAnswer(need uint8) float64 {
	for i := range 3 {
		if b := uint8(1) << i; need&b != 0 && (p.direct|p.viaURL)&b != 0 {
			e := p.e[i]
			if p.fillsAll {
				e = p.callE[b]
			}
			if p.p[i] <= 0 {
				return 1e300
			}
			return e / p.p[i]
		}
	}
	return 1e300
}
