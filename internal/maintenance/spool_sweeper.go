package maintenance

import (
	"context"
	"time"

	"github.com/enrichq/enrichq/internal/spool"
)

// SpoolSweeperConfig tunes a SpoolSweeper. Zero values take the defaults.
type SpoolSweeperConfig struct {
	// Interval between steps. Default DefaultInterval.
	Interval time.Duration
	// Dir is the folder the API spools uploads in; "" is the system's
	// temporary directory, the API's default.
	Dir string
	// Now is the clock a half-made folder ages by; default time.Now.
	Now func() time.Time
}

// SpoolSweeper removes the spool folders of uploads that a crashed API
// process left on this machine (spool.Sweep): they hold raw lists. A folder
// of a live upload is locked by its process and kept. The API sweeps its
// folder when it starts too; this sweep reaches it only where the
// scheduler shares the machine (or the volume) with an API.
type SpoolSweeper struct {
	cfg SpoolSweeperConfig
}

// NewSpoolSweeper builds a SpoolSweeper.
func NewSpoolSweeper(cfg SpoolSweeperConfig) *SpoolSweeper {
	cfg.Interval = intervalOr(cfg.Interval)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &SpoolSweeper{cfg: cfg}
}

// Name implements Service.
func (s *SpoolSweeper) Name() string { return "spool_sweeper" }

// Interval implements Service.
func (s *SpoolSweeper) Interval() time.Duration { return s.cfg.Interval }

// Step returns how many left folders it removed.
func (s *SpoolSweeper) Step(context.Context) (int, error) {
	return spool.Sweep(s.cfg.Dir, s.cfg.Now())
}
