package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/enrichq/enrichq/internal/store"
)

// KeepLease is the heartbeat of claimed rows, vendor chunks' and member
// syncs' alike: every third of lease it extends the rows' lease (and their
// lookup claims, to claimTTL) until the returned func is called, which
// waits for the last extension to end. A failed extension is logged: the
// next one may succeed, and a lost lease is the rescuer's to find.
func KeepLease(ctx context.Context, st *store.Store, log *slog.Logger, token string, ids []int64, lease time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := st.ExtendLease(ctx, token, ids, lease, claimTTL(lease)); err != nil && ctx.Err() == nil {
					log.Warn("lease heartbeat failed", "err", err)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}
