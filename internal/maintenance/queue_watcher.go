package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/store"
)

// QueueWatcherConfig tunes a QueueWatcher. Zero values take the defaults.
type QueueWatcherConfig struct {
	// Interval between steps. Default DefaultInterval.
	Interval time.Duration
}

// QueueWatcher notices that Redis lost the queue (FLUSHALL, a restart
// without persistence, a failover to an empty replica) and clears the
// chunks' enqueued stamps, so the dispatcher hands every chunk with work to
// the queue again now, not a recheck later.
type QueueWatcher struct {
	store *store.Store
	enq   *jobs.Enqueuer
	cfg   QueueWatcherConfig
	log   *slog.Logger
}

// NewQueueWatcher builds a QueueWatcher; log nil is slog.Default().
func NewQueueWatcher(st *store.Store, enq *jobs.Enqueuer, cfg QueueWatcherConfig, log *slog.Logger) *QueueWatcher {
	cfg.Interval = intervalOr(cfg.Interval)
	return &QueueWatcher{store: st, enq: enq, cfg: cfg, log: loggerOr(log)}
}

// Name implements Service.
func (w *QueueWatcher) Name() string { return "queue_watcher" }

// Interval implements Service.
func (w *QueueWatcher) Interval() time.Duration { return w.cfg.Interval }

// Step returns how many chunks it marked for handing again: 0 while the
// queue is whole.
func (w *QueueWatcher) Step(ctx context.Context) (int, error) {
	lost, err := w.enq.QueueLost(ctx)
	if err != nil || !lost {
		return 0, err
	}
	n, err := w.store.ForgetEnqueued(ctx)
	if err != nil {
		return 0, err
	}
	if n > 0 {
		w.log.Warn("the queue was lost (Redis flushed or restarted empty): handing the open chunks to the queue again", "chunks", n)
	}
	return int(n), nil
}
