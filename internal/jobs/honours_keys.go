package jobs

import (
	"context"

	"github.com/enrichq/enrichq/internal/domain"
)

// honoursKeys says whether the vendor is known to honour Idempotency-Key:
// as the setting forces it, else as learned (store.LearnHonoursKeys). Only
// then does a fresh answer to a retry prove that the earlier sends of its key
// were not billed. An error reading it counts as not known: the earlier
// sends then stay at their worst case, over the bill, never under.
func (p *Processor) honoursKeys(ctx context.Context) bool {
	switch p.cfg.HonoursKeys {
	case domain.HonoursKeysTrue:
		return true
	case domain.HonoursKeysFalse:
		return false
	}
	if p.honours.Load() {
		return true
	}
	h, known, err := p.store.HonoursKeys(ctx, p.cfg.Account)
	if err != nil {
		p.log.Warn("whether the vendor honours Idempotency-Key is not readable; taken as not known", "err", err)
		return false
	}
	if known && h {
		p.honours.Store(true)
	}
	return known && h
}

// learnHonoursKeys records that the vendor replayed an Idempotency-Key
// (ledger call by): it honours keys. Recorded whatever the setting, so that
// auto knows it from then on.
func (p *Processor) learnHonoursKeys(ctx context.Context, by int64) {
	if p.honours.Load() {
		return
	}
	first, err := p.store.LearnHonoursKeys(ctx, p.cfg.Account, by)
	if err != nil {
		p.log.Warn("the vendor's replay was not remembered", "ledger_id", by, "err", err)
		return
	}
	p.honours.Store(true)
	if first {
		p.log.Info("the vendor honours Idempotency-Key: learned from its first replay", "ledger_id", by)
	}
}
