package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/enrichq/enrichq/internal/store"
)

// The key-wide usage witness settles what a run's own witness (usage
// witness) cannot: the lost calls of a worker that died, which took its
// readings with it. It reads a key's balance at quiet moments only: no
// reservation of the key open anywhere (store.ReadKeyUsage), so that every
// call of the key is wholly between two readings. Between two of them the
// balance fell by what the vendor billed to the key's calls in the ledger
// between them: the answered ones are known, and a lost one is proposed a
// price by the later answered send of the same question (a retry of its
// row: the vendor answers a question the same way twice, a miss free, a
// found email billed). A fall equal to the known charges proves the lost
// calls billed nothing; a fall of the known charges plus every lost call
// at its proposed price settles them at it; a fall of the known charges
// plus every lost call at its worst confirms them; any other fall proves
// nothing and they stay at their worst case, over the bill, never
// under (docs/money.md).

// keyWitnessTimeout bounds one key's reading: the key's reservations wait
// for it.
const keyWitnessTimeout = 10 * time.Second

// WitnessKeys takes a quiet reading of each vendor key whose answers carry
// no balance but whose vendor tells it (enrich.BalanceReader), and settles
// the key's lost calls since the reading before where the readings prove
// their price. It returns how many it settled. A key with a call in flight
// is skipped: its next quiet moment reads it. cmd/worker runs it
// periodically; a chunk run asks it before its first call to such a vendor.
func (p *Processor) WitnessKeys(ctx context.Context) (int, error) {
	var (
		n    int
		errs []error
		seen = map[string]bool{}
	)
	for _, l := range p.lanes {
		if seen[l.Account] {
			continue
		}
		seen[l.Account] = true
		k, _, err := p.witnessKey(ctx, l)
		n += k
		if err != nil {
			errs = append(errs, fmt.Errorf("vendor %s: %w", l.name, err))
		}
	}
	return n, errors.Join(errs...)
}

// keyWitnessed says whether lane l's key is read by the key-wide witness.
func (l *lane) keyWitnessed() bool { return l.readsUsage() && l.Account != "" }

// witnessKey reads lane l's key at a quiet moment and settles what it
// proves. read is the balance it read, nil when the key was not quiet.
func (p *Processor) witnessKey(ctx context.Context, l *lane) (settled int, read *int64, err error) {
	if !l.keyWitnessed() {
		return 0, nil, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keyWitnessTimeout)
	defer cancel()
	ku, err := p.store.ReadKeyUsage(ctx, l.Account, l.balance)
	if err != nil || !ku.Quiet {
		return 0, nil, err
	}
	if ku.First {
		return 0, &ku.Balance, nil
	}
	return p.settleByKeyUsage(ctx, l, ku), &ku.Balance, nil
}

// settleByKeyUsage settles the unknown calls of ku when its fall proves
// their price, and returns how many it settled.
func (p *Processor) settleByKeyUsage(ctx context.Context, l *lane, ku store.KeyUsage) int {
	v := keyUsageVerdict(l.units(ku.Fall), ku)
	if len(v.lost) == 0 {
		return 0
	}
	if v.prices == nil {
		p.log.Info("the key's usage does not settle its lost calls: they stay at their worst case", "vendor", l.name,
			"lost", len(v.lost), "unread_units", v.unread)
		return 0
	}
	reason := fmt.Sprintf("settled by the vendor's usage counters: %d units billed between two quiet readings of the key beyond its answered calls, for %d lost calls", v.unread, len(v.lost))
	var n int
	for i, c := range v.lost {
		if err := p.store.SettleUnknownByUsage(ctx, c.ID, v.prices[i], reason); err != nil {
			p.log.Error("ledger update failed", "ledger_id", c.ID, "err", err)
			continue
		}
		n++
	}
	p.log.Info("lost calls settled by the key's usage counters", "vendor", l.name, "calls", n, "units", v.unread)
	return n
}

// keyVerdict is what a key's fall between two quiet readings proves of its
// lost calls: prices[i] is lost[i]'s, nil when nothing is proven.
type keyVerdict struct {
	lost   []store.KeyUsageCall
	unread int64 // the fall beyond the answered calls' charges, in budget units
	prices []int64
}

// keyUsageVerdict weighs a fall of fall budget units against ku's calls:
// the balance only falls, by every call billed between the readings, so
// the fall beyond the answered calls is what the lost ones cost. Nothing
// of it: each cost nothing. Their proposed prices' sum (every one
// proposed): each its proposed price. Their worst cases' sum: each its
// worst. Anything else proves nothing.
func keyUsageVerdict(fall int64, ku store.KeyUsage) keyVerdict {
	var (
		v            keyVerdict
		known, worst int64
		proposed     int64
		allProposed  = true
	)
	for _, c := range ku.Calls {
		if !c.Unknown {
			known += c.Charged
			continue
		}
		v.lost = append(v.lost, c)
		worst += c.Charged
		if c.Proposed == nil {
			allProposed = false
		} else {
			proposed += *c.Proposed
		}
	}
	v.unread = fall - known
	if len(v.lost) == 0 || ku.Fall < 0 { // a fall below 0: the quota renewed between the readings
		return v
	}
	price := func(store.KeyUsageCall) int64 { return 0 }
	switch {
	case v.unread == 0:
	case allProposed && v.unread == proposed:
		price = func(c store.KeyUsageCall) int64 { return *c.Proposed }
	case v.unread == worst:
		price = func(c store.KeyUsageCall) int64 { return c.Charged }
	default:
		return v
	}
	v.prices = make([]int64, len(v.lost))
	for i, c := range v.lost {
		v.prices[i] = price(c)
	}
	return v
}
