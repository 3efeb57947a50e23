package platform

import (
	"context"
	"time"
)

// TokenSweeper is the periodic step that makes token expiry loud (see
// [Platform.SweepTokens]) and deletes connect requests that expired.
type TokenSweeper struct {
	p        *Platform
	interval time.Duration
}

// NewTokenSweeper builds the token step of p, run every interval (default
// DefaultStepInterval).
func NewTokenSweeper(p *Platform, interval time.Duration) *TokenSweeper {
	return &TokenSweeper{p: p, interval: positive(interval, DefaultStepInterval)}
}

// Name names the step in logs.
func (s *TokenSweeper) Name() string { return "platform_token_sweeper" }

// Interval is the period between steps.
func (s *TokenSweeper) Interval() time.Duration { return s.interval }

// Step refreshes, expires and warns, and returns how many members it
// refreshed, expired or warned about.
func (s *TokenSweeper) Step(ctx context.Context) (int, error) {
	st, err := s.p.SweepTokens(ctx)
	did := st.Refreshed + st.Expired + st.Warned
	if err != nil {
		return did, err
	}
	if _, err := s.p.store.DeleteExpiredConnectStates(ctx, s.p.cfg.Now()); err != nil {
		return did, err
	}
	return did, nil
}
