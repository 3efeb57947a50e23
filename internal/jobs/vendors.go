package jobs

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
)

// DefaultVendorName names the one vendor the ENRICHQ_VENDOR_* variables
// make (config.FallbackVendorName): its results keep source "vendor", and
// its no-matches and Idempotency-Keys the shapes they had with one vendor.
const DefaultVendorName = "vendor"

// VendorConfig is one configured vendor as the processor uses it.
type VendorConfig struct {
	// Vendor is its adapter (enrich.Build makes it from the vendors file).
	Vendor enrich.Vendor
	// Limiter paces its calls, shared by every worker under its key.
	Limiter Limiter
	// Account is its key's id (ratelimit.KeyPrefix): its monthly usage is
	// tracked, capped by Allowance when set, and its balance readings
	// witness the ledger.
	Account   string
	Allowance *int64
	// CreditValue is what one of its credits is worth in budget units
	// (default 1). The ledger, budgets, the account's usage and its balance
	// readings are all counted in budget units: a vendor's credits times it.
	CreditValue int64
	// Prices replaces the price book of an adapter whose answers teach its
	// prices (enrich.PriceTeacher); nil: the adapter's own. The book,
	// learned from its answers and shared through Postgres, prices what
	// must be inferred and the worst case reserved. Other adapters price
	// with their own Price.
	Prices *enrich.PriceBook
	// NoBulk keeps its bulk endpoint unused even with ProcessorConfig.Bulk.
	NoBulk bool
}

// lane is a configured vendor with what the processor learns of it.
type lane struct {
	VendorConfig
	p    *Processor
	name string
	caps enrich.Caps
	// teacher: the adapter's answers teach its prices (Prices is its book);
	// nil: it is priced by its own Price.
	teacher enrich.PriceTeacher
	// buyer: its bulk call for a stage buys later stages with it; nil: none.
	buyer enrich.BulkBuyer
	// honours: the vendor was seen to honour Idempotency-Key (learned once,
	// never unlearned).
	honours atomic.Bool
	// learner keeps Prices in step with the shared price list.
	learner priceLearner
	// keyNotes: what its answers said of its key, as written (noteKey).
	keyNotes keyNotes
}

func newLanes(p *Processor, vendors []VendorConfig) []*lane {
	out := make([]*lane, 0, len(vendors))
	seen := map[string]bool{}
	for _, v := range vendors {
		if v.Vendor == nil {
			panic("jobs: a vendor without an adapter")
		}
		name := v.Vendor.Name()
		if seen[name] {
			panic(fmt.Sprintf("jobs: vendor %q configured twice", name))
		}
		seen[name] = true
		if v.CreditValue <= 0 {
			v.CreditValue = 1
		}
		if v.Limiter == nil {
			v.Limiter = noLimiter{}
		}
		l := &lane{VendorConfig: v, p: p, name: name, caps: v.Vendor.Caps()}
		if t, ok := v.Vendor.(enrich.PriceTeacher); ok {
			l.teacher = t
			if l.Prices == nil {
				l.Prices = t.Book()
			}
		} else {
			l.Prices = nil
		}
		l.buyer, _ = v.Vendor.(enrich.BulkBuyer)
		l.learner.reloads = p.learnerReloads
		out = append(out, l)
	}
	return out
}

// units is credits of the vendor in budget units, checked: a product that
// does not fit in an int64 is held at its bound (no budget covers it)
// rather than wrapped. The vendors file refuses a credit_value that its
// contract's largest charge could overflow (config), and charges are held
// to the contract before they are counted (withinContract).
func (l *lane) units(credits int64) int64 { return enrich.SaturatedUnits(credits, l.CreditValue) }

// worst is what to reserve, in budget units, before asking q.
func (l *lane) worst(q enrich.Question) int64 {
	if l.teacher != nil {
		var n int64
		for _, s := range q.Stages {
			n += l.Prices.Worst(s)
		}
		return l.units(n)
	}
	return l.units(l.Vendor.Price(q).Worst)
}

// bulkUsable says whether stage's rows go to this vendor in bulk calls.
func (l *lane) bulkUsable(stage domain.Stage) bool {
	if !l.p.cfg.Bulk || l.NoBulk || l.caps.MaxBulk <= 0 {
		return false
	}
	return stage == domain.StageProfile || l.caps.FillsAll
}

// bulkSize is the questions per bulk call to this vendor.
func (l *lane) bulkSize() int { return min(l.p.cfg.BulkSize, l.caps.MaxBulk) }

// honoursSetting is the configured Idempotency-Key behaviour.
func (l *lane) honoursSetting() domain.HonoursKeys { return l.caps.Billing.HonoursKeys }

// noLimiter paces nothing.
type noLimiter struct{}

func (noLimiter) Wait(context.Context) error                     { return nil }
func (noLimiter) Throttled(context.Context, time.Duration) error { return nil }
func (noLimiter) Succeeded(context.Context)                      {}

// kindOf is the adapter kind of the vendor named name (enrich.Records),
// kept with its cached answers.
func (p *Processor) kindOf(name string) string {
	for _, l := range p.lanes {
		if l.name == name {
			if r, ok := l.Vendor.(enrich.Records); ok {
				return r.Kind()
			}
		}
	}
	return ""
}

// replays says whether the vendor's answers may be replays of an earlier
// send of their key (enrich.Billing.Replays).
func (l *lane) replays() bool { return l.caps.Billing.Replays != enrich.ReplayNone }
