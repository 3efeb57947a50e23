package maintenance

import (
	"context"
	"time"

	"github.com/enrichq/enrichq/internal/store"
)

// ReservationExpirerConfig tunes a ReservationExpirer. Zero values take the defaults.
type ReservationExpirerConfig struct {
	// Interval between steps. Default DefaultInterval.
	Interval time.Duration
	// Batch caps the reservations one step closes. Default DefaultBatch.
	Batch int
}

// ReservationExpirer counts credit reservations older than their expiry as
// spent: a worker died holding them, and the vendor may have billed the call.
type ReservationExpirer struct {
	store *store.Store
	cfg   ReservationExpirerConfig
}

// NewReservationExpirer builds a ReservationExpirer.
func NewReservationExpirer(st *store.Store, cfg ReservationExpirerConfig) *ReservationExpirer {
	cfg.Interval, cfg.Batch = intervalOr(cfg.Interval), batchOr(cfg.Batch)
	return &ReservationExpirer{store: st, cfg: cfg}
}

// Name implements Service.
func (e *ReservationExpirer) Name() string { return "reservation_expirer" }

// Interval implements Service.
func (e *ReservationExpirer) Interval() time.Duration { return e.cfg.Interval }

// Step returns how many reservations it closed.
func (e *ReservationExpirer) Step(ctx context.Context) (int, error) {
	return e.store.ExpireReservations(ctx, e.cfg.Batch)
}
