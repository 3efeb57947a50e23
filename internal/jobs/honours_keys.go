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
func (l *lane) honoursKeys(ctx context.Context) bool {
	switch l.honoursSetting() {
	case domain.HonoursKeysTrue:
		return true
	case domain.HonoursKeysFalse:
		return false
	}
	if l.honours.Load() {
		return true
	}
	h, known, err := l.p.store.HonoursKeys(ctx, l.Account)
	if err != nil {
		l.p.log.Warn("whether the vendor honours Idempotency-Key is not readable; taken as not known", "err", err)
		return false
	}
	if known && h {
		l.honours.Store(true)
	}
	return known && h
}

// learnHonoursKeys records that the vendor replayed an Idempotency-Key
// (ledger call by): it honours keys. Recorded whatever the setting, so that
// auto knows it from then on.
func (l *lane) learnHonoursKeys(ctx context.Context, by int64) {
	if l.honours.Load() {
		return
	}
	first, err := l.p.store.LearnHonoursKeys(ctx, l.Account, by)
	if err != nil {
		l.p.log.Warn("the vendor's replay was not remembered", "vendor", l.name, "ledger_id", by, "err", err)
		return
	}
	l.honours.Store(true)
	if first {
		l.p.log.Info("the vendor honours Idempotency-Key: learned from its first replay", "vendor", l.name, "ledger_id", by)
	}
}

// honoursKeysAll says whether every vendor is known to honour
// Idempotency-Key: the explain step weighs a job's calls of all its vendors
// at once, so a fresh answer settles earlier sends only then.
func (p *Processor) honoursKeysAll(ctx context.Context) bool {
	for _, l := range p.lanes {
		if !l.honoursKeys(ctx) {
			return false
		}
	}
	return true
}
