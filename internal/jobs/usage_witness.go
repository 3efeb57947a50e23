package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

// The usage witness settles the calls of unknown outcome of a vendor whose
// answers carry no balance (the third vendor: no credit header at all) but
// who tells a key's usage on a call of its own (enrich.BalanceReader, its
// GET /v2/account). A run reads the balance before its first call to such a
// vendor, and, when some of its calls to it were lost (their answers never
// read: counted at their worst case), again at its end. The balance only
// falls, and every call billed between the readings is in the fall: this
// run's answered calls (priced by the contract's rules), its lost calls,
// and any other user's of the key. So a fall equal to what the answered
// calls cost proves the lost ones billed nothing: settled at 0. A fall of
// the answered calls plus every lost call at its worst confirms them:
// settled at it. Any other fall (another worker's calls on the key, a
// mixed outcome) proves nothing: they stay counted at their worst case,
// over the bill, never under (docs/money.md).

// usageWitness is one run's readings and calls of one such vendor.
type usageWitness struct {
	once   sync.Once
	before *int64 // the balance before the run's first call, in credits; nil: not read
	mu     sync.Mutex
	known  int64 // credits of the run's answered calls
	lost   []lostCall
}

// lostCall is a call of unknown outcome, counted at its worst case: base
// is what it is known to have cost (an answer http.Transport got on a
// second send), worst what its lost send may have cost on top, in credits.
type lostCall struct {
	id          int64
	base, worst int64
}

// usage is lane l's witness in this run; nil when l's answers carry their
// balance, or it cannot tell it.
func (c *chunkRun) usage(l *lane) *usageWitness {
	if !l.readsUsage() {
		return nil
	}
	c.usageMu.Lock()
	defer c.usageMu.Unlock()
	if c.usages == nil {
		c.usages = map[string]*usageWitness{}
	}
	u := c.usages[l.name]
	if u == nil {
		u = &usageWitness{}
		c.usages[l.name] = u
	}
	return u
}

// readBefore reads lane l's balance once, before the run's first call to
// it leaves (every call waits for it).
func (c *chunkRun) readBefore(ctx context.Context, l *lane) {
	u := c.usage(l)
	if u == nil {
		return
	}
	u.once.Do(func() {
		// A moment before any call of the run: the key may be quiet, and its
		// reading settle what dead workers left (key usage witness), and
		// be this run's first reading too.
		_, read, err := c.p.witnessKey(ctx, l)
		if err != nil {
			c.p.log.Warn("the key's usage not read", "vendor", l.name, "err", err)
		}
		if read != nil {
			u.before = read
		} else if b, ok := c.readBalance(ctx, l); ok {
			u.before = &b
		}
	})
}

func (c *chunkRun) readBalance(ctx context.Context, l *lane) (int64, bool) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	b, err := l.balance(rctx)
	if err != nil {
		c.p.log.Warn("the vendor's usage not read: this run's lost calls stay at their worst case", "vendor", l.name, "job_id", c.job.ID, "err", err)
		return 0, false
	}
	return b, true
}

// readsUsage says lane l's balance is read to settle its lost calls: its
// answers do not carry it, and it can be asked.
func (l *lane) readsUsage() bool {
	_, ok := l.Vendor.(enrich.BalanceReader)
	return ok && l.caps.Billing.BalanceHeader == ""
}

// balance asks lane l's vendor its key's remaining credits.
func (l *lane) balance(ctx context.Context) (int64, error) {
	ch, err := l.Vendor.(enrich.BalanceReader).Balance(ctx)
	if err == nil && !ch.RemainingReported {
		err = errors.New("the vendor did not tell its balance")
	}
	return ch.Remaining, err
}

// witnessCall records a call of lane l made under reservation res (ledger
// id): answered at charge credits, or lost (of unknown outcome).
func (c *chunkRun) witnessCall(l *lane, id int64, res store.Reservation, a answered, callErr error) {
	u := c.usage(l)
	if u == nil {
		return
	}
	worst := res.Credits / max(l.CreditValue, 1) // the reservation is one send's worst case
	u.mu.Lock()
	defer u.mu.Unlock()
	var ve *enrich.Error
	switch {
	case callErr == nil && a.charge.Resent && !a.charge.Reported && a.charge.Credits > a.charge.Estimate:
		u.known += a.charge.Estimate
		u.lost = append(u.lost, lostCall{id: id, base: a.charge.Estimate, worst: a.charge.Credits - a.charge.Estimate})
	case callErr == nil:
		u.known += a.charge.Credits
	case errors.As(callErr, &ve) && ve.Charge != nil:
		u.known += ve.Charge.Credits
	case errors.As(callErr, &ve) && !ve.OutcomeUnknown:
		// refused or failed before any work: released, nothing billed
	case errors.Is(callErr, errDraining), errors.Is(callErr, errNotSent), errors.Is(callErr, errStopJob):
	default:
		u.lost = append(u.lost, lostCall{id: id, worst: worst})
	}
}

// settleByUsage settles each such lane's lost calls of the run by its
// readings, at the run's end.
func (c *chunkRun) settleByUsage(ctx context.Context) {
	c.usageMu.Lock()
	usages := c.usages
	c.usageMu.Unlock()
	for _, l := range c.p.lanes {
		u := usages[l.name]
		if u == nil || u.before == nil || len(u.lost) == 0 {
			continue
		}
		after, ok := c.readBalance(ctx, l)
		if !ok {
			continue
		}
		var worst int64
		for _, lc := range u.lost {
			worst += lc.worst
		}
		unread := *u.before - after - u.known // billed to calls whose answers were not read
		var billed bool                       // every lost send was billed at its worst; else none was
		switch unread {
		case 0:
		case worst:
			billed = true
		default:
			c.p.log.Info("the vendor's usage does not settle this run's lost calls: they stay at their worst case", "vendor", l.name,
				"job_id", c.job.ID, "lost", len(u.lost), "unread_credits", unread, "worst_credits", worst)
			continue
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		for _, lc := range u.lost {
			reason := fmt.Sprintf("settled by the vendor's usage counters: %d credits billed between the run's readings beyond its answered calls, for %d lost calls", unread, len(u.lost))
			charged := lc.base
			if billed {
				charged += lc.worst
			}
			if err := c.p.store.SettleByUsage(sctx, lc.id, l.units(charged), reason); err != nil {
				c.p.log.Error("ledger update failed", "ledger_id", lc.id, "err", err)
			}
		}
		cancel()
		c.p.log.Info("lost calls settled by the vendor's usage counters", "vendor", l.name, "job_id", c.job.ID, "calls", len(u.lost), "credits", unread)
	}
}
