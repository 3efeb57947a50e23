package jobs

import (
	"context"
	"sync"
	"time"

	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

// priceLearner keeps the processor's price book (enrich.PriceBook, the
// vendor account's learned price list) in step with the shared list in
// Postgres: news (a class first priced, a price changed) is written at
// once, so that every worker infers with it; answers that only agree are
// counted in memory and added after each chunk.
type priceLearner struct {
	mu      sync.Mutex
	agreed  map[enrich.PriceClass]store.PriceAgreement
	loaded  time.Time
	reloads time.Duration // at most one read of the shared list per this
}

// refreshPrices reads the shared price list into the book, at most once a
// second: another worker may have learned a price. A failure keeps the
// book as it is.
func (p *Processor) refreshPrices(ctx context.Context) {
	for _, l := range p.lanes {
		l.refreshPrices(ctx)
	}
}

func (ln *lane) refreshPrices(ctx context.Context) {
	if ln.Account == "" || ln.Prices == nil {
		return
	}
	p := ln.p
	l := &ln.learner
	now := time.Now()
	l.mu.Lock()
	due := now.Sub(l.loaded) >= l.reloads
	if due {
		l.loaded = now
	}
	l.mu.Unlock()
	if !due {
		return
	}
	list, err := p.store.VendorPrices(ctx, ln.Account)
	if err != nil {
		p.log.Warn("the learned price list was not read; the book stays as it was", "err", err)
		return
	}
	ln.Prices.Load(LearnedPrices(list))
}

// LearnedPrices converts the store's price list to the book's (classes this
// version does not know are left out).
func LearnedPrices(list []store.VendorPrice) []enrich.LearnedPrice {
	out := make([]enrich.LearnedPrice, 0, len(list))
	for _, v := range list {
		c, err := enrich.ParsePriceClass(v.Class)
		if err != nil {
			continue
		}
		lp := enrich.LearnedPrice{Class: c, Credits: v.Credits, Highest: v.Highest, Answers: v.Answers, Previous: v.Previous, LearnedAt: v.LearnedAt}
		if v.ChangedAt != nil {
			lp.ChangedAt = *v.ChangedAt
		}
		out = append(out, lp)
	}
	return out
}

// learnPrice records that a fresh answer of class (ledger call by) was
// charged credits: news is written and logged at once, an agreeing answer
// counted for the next flush.
func (ln *lane) learnPrice(ctx context.Context, class enrich.PriceClass, credits, by int64) {
	if !class.Valid() || ln.Prices == nil {
		return
	}
	p := ln.p
	news, _ := ln.Prices.Observe(class, credits, p.cfg.Now())
	if !news || ln.Account == "" {
		if ln.Account != "" {
			ln.agree(class, credits, 1)
		}
		return
	}
	l, err := p.store.LearnPrice(ctx, ln.Account, class.String(), credits, by)
	if err != nil {
		p.log.Warn("a price the vendor showed was not recorded", "class", class.String(), "credits", credits, "ledger_id", by, "err", err)
		return
	}
	switch {
	case l.Changed:
		p.log.Warn("the vendor's price changed", "class", class.String(), "from", l.Prev, "to", credits, "ledger_id", by)
		p.cfg.Metrics.VendorPrice(class.String(), credits, true)
	case l.New:
		p.log.Info("price learned from the vendor's answer", "class", class.String(), "credits", credits, "ledger_id", by)
		p.cfg.Metrics.VendorPrice(class.String(), credits, false)
	}
}

// learnBulk learns from a fresh bulk call's total (ledger call by) what it
// can: the classes without a learned price that this call, with the calls
// before it, determines (enrich.PriceBook.SolveBulk); when every class has
// one and the total agrees, each counts as agreeing.
func (ln *lane) learnBulk(ctx context.Context, counts map[enrich.PriceClass]int64, total, by int64) {
	if len(counts) == 0 || ln.Prices == nil {
		return
	}
	p := ln.p
	if solved := ln.Prices.SolveBulk(counts, total); len(solved) > 0 {
		for c, price := range solved {
			ln.learnPrice(ctx, c, price, by)
		}
		return
	}
	var sum int64
	for c, n := range counts {
		price, known := ln.Prices.Price(c)
		if !known {
			return // two classes or more unknown: nothing to tell
		}
		sum += n * price
	}
	if sum != total {
		p.log.Debug("a bulk call's total disagrees with the learned prices", "ledger_id", by, "charged", total, "priced", sum)
		return
	}
	if ln.Account == "" {
		return
	}
	for c, n := range counts {
		price, _ := ln.Prices.Price(c)
		ln.agree(c, price, n)
	}
}

func (ln *lane) agree(c enrich.PriceClass, credits, n int64) {
	l := &ln.learner
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.agreed == nil {
		l.agreed = map[enrich.PriceClass]store.PriceAgreement{}
	}
	a := l.agreed[c]
	if a.Class != "" && a.Credits != credits {
		a.Answers = 0
	}
	a.Class, a.Credits, a.Answers = c.String(), credits, a.Answers+n
	l.agreed[c] = a
}

// flushPrices adds the agreeing answers counted since the last flush to the
// shared list.
func (p *Processor) flushPrices(ctx context.Context) {
	for _, l := range p.lanes {
		l.flushPrices(ctx)
	}
}

func (ln *lane) flushPrices(ctx context.Context) {
	p := ln.p
	l := &ln.learner
	l.mu.Lock()
	agreed := make([]store.PriceAgreement, 0, len(l.agreed))
	for _, a := range l.agreed {
		agreed = append(agreed, a)
	}
	l.agreed = nil
	l.mu.Unlock()
	if len(agreed) == 0 {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := p.store.AgreePrices(sctx, ln.Account, agreed); err != nil {
		p.log.Warn("answers agreeing with the learned prices were not counted", "err", err)
	}
}
