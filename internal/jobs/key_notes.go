package jobs

import (
	"context"
	"sync"
	"time"

	"github.com/enrichq/enrichq/internal/enrich"
)

// keyNoteEvery bounds how often a worker writes a vendor key's balance
// split while nothing changes: a figure for GET /v1/vendors, not a witness
// (the ledger keeps the balance of every call).
const keyNoteEvery = time.Minute

// keyNotes is what a lane's answers said of its key, as this worker wrote
// it to vendor_key_notes, and warned of in its log.
type keyNotes struct {
	mu        sync.Mutex
	balanceAt time.Time // last balance note written
	inOverage bool      // as last written
	hiddenAt  time.Time // last hidden-contacts note written
	// low is the lowest balance (purchased + overage credits) an answer
	// showed, at lowAt (zero: none yet): an answer showing more within
	// keyNoteEvery was overtaken by a later one on the way (concurrent
	// calls) and is not noted, so that the note never goes back to an
	// older balance.
	low   int64
	lowAt time.Time
	// writes orders the balance writes: each decision to write takes the
	// next number, and a write whose number is not the last one's is
	// skipped (a later decision writes after it, under writeMu).
	writes  uint64
	writeMu sync.Mutex
	// limitWarned: the configured rate was found above the vendor's own
	// statement of its limit, and said so.
	limitWarned bool
}

// configuredRate is a Limiter that tells its configured rate
// (ratelimit.Limiter does).
type configuredRate interface{ Configured() float64 }

// aboveLimit warns, once per worker and vendor, when the configured rate
// is above what the vendor's fixed window allows (its X-RateLimit-Limit
// over the window): the calls past the vendor's limit are only refused
// with 429, and the rate should be lowered to the vendor's.
func (c *chunkRun) aboveLimit(l *lane, rl *enrich.RateLimit) {
	cr, ok := l.Limiter.(configuredRate)
	if !ok || rl.Limit <= 0 || rl.Window <= 0 {
		return
	}
	allowed := float64(rl.Limit) / float64(rl.Window)
	if cr.Configured() <= allowed*1.05 {
		return
	}
	n := &l.keyNotes
	n.mu.Lock()
	warned := n.limitWarned
	n.limitWarned = true
	n.mu.Unlock()
	if !warned {
		c.p.log.Warn("a vendor's configured rate is above the limit it states for the key: the calls past it are refused (429); lower the vendors file's rate",
			"vendor", l.name, "rate", cr.Configured(), "vendor_limit", rl.Limit, "window_seconds", rl.Window, "vendor_rate", allowed)
	}
}

// noteKey records what an answer said of the lane's key: the balance split
// (written when the key goes into overage or out of it, else at most every
// keyNoteEvery), and that its plan hides contact data (at most every
// keyNoteEvery). Each goes with a warning in the log, once per change:
// spending into overage bills at the overage rate, and a plan that hides
// contact data is paid for matches whose emails and phones other vendors
// are then paid for again.
func (c *chunkRun) noteKey(ctx context.Context, l *lane, o *enrich.Overage, hidden bool) {
	if o == nil && !hidden {
		return
	}
	now := time.Now()
	n := &l.keyNotes
	n.mu.Lock()
	if o != nil {
		total := o.PurchasedRemaining + o.OveragesRemaining
		if !n.lowAt.IsZero() && total > n.low && now.Sub(n.lowAt) < keyNoteEvery {
			o = nil // an older answer than one already noted
		} else {
			n.low, n.lowAt = total, now
		}
	}
	writeBalance := o != nil && (o.InOverage() != n.inOverage || now.Sub(n.balanceAt) >= keyNoteEvery)
	entered := o != nil && o.InOverage() && !n.inOverage
	var write uint64
	if writeBalance {
		n.balanceAt, n.inOverage = now, o.InOverage()
		n.writes++
		write = n.writes
	}
	writeHidden := hidden && now.Sub(n.hiddenAt) >= keyNoteEvery
	firstHidden := writeHidden && n.hiddenAt.IsZero()
	if writeHidden {
		n.hiddenAt = now
	}
	n.mu.Unlock()
	if entered {
		c.p.log.Warn("a vendor key spends into overage: its purchased credits are spent, what it is charged now is billed as overage",
			"vendor", l.name, "overage_credits_left", o.OveragesRemaining)
	}
	if firstHidden {
		c.p.log.Warn("a vendor key's plan hides contact data: its matches carry no email or phone (true/false in their place), so those stages go to the next vendor; upgrade the plan or take email and phone from another vendor",
			"vendor", l.name)
	}
	if writeBalance {
		n.writeMu.Lock()
		n.mu.Lock()
		last := n.writes == write
		n.mu.Unlock()
		if last {
			if err := c.p.store.NoteVendorBalance(ctx, l.name, o.PurchasedRemaining, o.OveragesRemaining); err != nil {
				c.p.log.Warn("vendor key note not recorded", "vendor", l.name, "err", err)
			}
		}
		n.writeMu.Unlock()
	}
	if writeHidden {
		if err := c.p.store.NoteContactsHidden(ctx, l.name); err != nil {
			c.p.log.Warn("vendor key note not recorded", "vendor", l.name, "err", err)
		}
	}
}
