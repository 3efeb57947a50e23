package jobs

import (
	"context"
	"log/slog"
	"testing"

	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// Answers of one key reach noteKey out of order when calls run at once:
// an answer older than one already noted (more credits left) must not put
// the note back. Here the answer that spent the last purchased credit is
// noted first, then an older one that still had one: the note keeps the
// overage. (Before, the older answer flipped the note out of overage.)
func TestKeyNoteNeverGoesBack(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	c := &chunkRun{p: &Processor{store: st, log: slog.New(slog.DiscardHandler)}}
	l := &lane{name: "pdl"}
	c.noteKey(ctx, l, &enrich.Overage{PurchasedRemaining: 0, OveragesRemaining: 99}, false)
	c.noteKey(ctx, l, &enrich.Overage{PurchasedRemaining: 1, OveragesRemaining: 100}, false)
	notes, err := st.VendorKeyNotes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := notes["pdl"]
	if n.PurchasedRemaining == nil || *n.PurchasedRemaining != 0 || n.OveragesRemaining == nil || *n.OveragesRemaining != 99 || n.OverageSince == nil {
		t.Fatalf("the note after an older answer: %+v, want the newer balance (0 purchased, 99 overage) still in overage", n)
	}
}
