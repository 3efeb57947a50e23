package maintenance

import (
	"context"
	"time"

	"github.com/enrichq/enrichq/internal/store"
)

// DefaultUploadBatch caps the uploads one step deletes: each may hold tens
// of MB, so a step stays short.
const DefaultUploadBatch = 20

// UploadExpirerConfig tunes an UploadExpirer. Zero values take the defaults.
type UploadExpirerConfig struct {
	// Interval between steps. Default DefaultInterval.
	Interval time.Duration
	// Batch caps the uploads one step deletes. Default DefaultUploadBatch.
	Batch int
	// Now is the clock uploads expire by; default time.Now.
	Now func() time.Time
}

// UploadExpirer deletes stored uploads past their expiry (POST
// /v1/uploads); they are already invisible to their tenant.
type UploadExpirer struct {
	store *store.Store
	cfg   UploadExpirerConfig
}

// NewUploadExpirer builds an UploadExpirer.
func NewUploadExpirer(st *store.Store, cfg UploadExpirerConfig) *UploadExpirer {
	cfg.Interval = intervalOr(cfg.Interval)
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultUploadBatch
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &UploadExpirer{store: st, cfg: cfg}
}

// Name implements Service.
func (e *UploadExpirer) Name() string { return "upload_expirer" }

// Interval implements Service.
func (e *UploadExpirer) Interval() time.Duration { return e.cfg.Interval }

// Step returns how many expired uploads it deleted.
func (e *UploadExpirer) Step(ctx context.Context) (int, error) {
	return e.store.DeleteExpiredUploads(ctx, e.cfg.Now(), e.cfg.Batch)
}
