package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

// A vendor may say that a person asked it to stop processing their data
// (enrich.ClassSuppressed, the third vendor's 451). Then nothing of theirs
// is stored from that vendor (its answer has nothing to store, and no
// no-match is cached for it), the person is recorded for that vendor
// (store.SuppressForVendor: a keyed hash of the normalised input it was
// asked), the audit log counts it, and the row goes on with the next
// vendor. That vendor is never asked about them again, by any job: each
// round of the waterfall drops the rows it must not ask (unsuppressed).

// personHash stands for the person a vendor is asked about: the keyed hash
// of the question's normalised input (the same form as the cache's keys).
func (c *chunkRun) personHash(q enrich.Question) []byte {
	r := store.Row{Kind: q.Query.Kind(), ProfileURL: q.Query.ProfileURL, Name: q.Query.Name, Company: q.Query.Company,
		Domain: q.Query.Domain, Email: q.Query.Email}
	return KeyedHash(c.p.cfg.ErasureKey, cacheKey(domain.StageProfile, r))
}

// suppressed handles a vendor's word that the person of rows (one question,
// q) opted out: recorded and audited, and the rows go on with the next
// vendor.
func (c *chunkRun) suppressed(ctx context.Context, l *lane, q enrich.Question, rows []*rowWork) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	fresh, err := c.p.store.SuppressForVendor(sctx, l.name, c.personHash(q))
	if err != nil {
		c.p.log.Error("a person's opt-out at a vendor not recorded; this run does not ask it again", "vendor", l.name, "job_id", c.job.ID, "err", err)
	}
	if fresh || err != nil {
		line := store.AuditLine{Tenant: c.job.Tenant, KeyID: store.ActorWorker, Action: store.AuditVendorSuppressed,
			Subject: fmt.Sprintf("vendor %s, job %s, row %d", l.name, c.job.ID, rows[0].row.ID), Rows: int64(len(rows))}
		if err := c.p.store.Audit(sctx, line); err != nil {
			c.p.log.Warn("a person's opt-out at a vendor not audited", "vendor", l.name, "job_id", c.job.ID, "err", err)
		}
	}
	c.p.log.Info("a vendor says the person opted out: nothing of theirs kept from it, never asked again", "vendor", l.name, "job_id", c.job.ID, "row_id", rows[0].row.ID)
	c.rowsMu.Lock()
	defer c.rowsMu.Unlock()
	for _, w := range rows {
		c.noMatchFrom(l, w, q.Stages[0], false)
	}
}

// unsuppressed drops from rows those whose person vendor l must not be
// asked about for stage (they go on with the next vendor). A failure to
// read the list asks no row of l in this round: never a suppressed person.
func (c *chunkRun) unsuppressed(ctx context.Context, l *lane, stage domain.Stage, rows []*rowWork) []*rowWork {
	hashes := make([][]byte, len(rows))
	for i, w := range rows {
		hashes[i] = c.personHash(c.questionFor(l, w, stage))
	}
	gone, err := c.p.store.VendorSuppressed(ctx, l.name, hashes)
	if err != nil {
		c.p.log.Warn("a vendor's opted-out persons not read; its rows wait for the next run", "vendor", l.name, "job_id", c.job.ID, "err", err)
		return nil
	}
	if len(gone) == 0 {
		return rows
	}
	out := rows[:0:0]
	c.rowsMu.Lock()
	defer c.rowsMu.Unlock()
	for i, w := range rows {
		if gone[i] {
			c.noMatchFrom(l, w, stage, false)
			continue
		}
		out = append(out, w)
	}
	return out
}
