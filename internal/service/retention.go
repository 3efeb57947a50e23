package service

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
)

// MinRetention is the shortest retention window a tenant may set: shorter,
// a job's results could go before its ETL has read them.
const MinRetention = time.Hour

// ParseRetention reads a retention window: whole days ("30d") or a Go
// duration ("720h"); "" or "none" is no window.
func ParseRetention(v string) (*time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" || v == "none" {
		return nil, nil
	}
	bad := invalidParam("retention", "retention %q is not a window like 30d or 720h (or null for none)", clip(v))
	d, err := time.ParseDuration(v)
	if err != nil {
		days, ok := strings.CutSuffix(v, "d")
		if !ok {
			return nil, bad
		}
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n > 100*365 {
			return nil, bad
		}
		d = time.Duration(n) * 24 * time.Hour
	}
	if d < MinRetention {
		return nil, invalidParam("retention", "retention %q is shorter than the minimum of %s", clip(v), MinRetention)
	}
	return &d, nil
}

// FormatRetention writes a window as ParseRetention reads it: days when whole.
func FormatRetention(d *time.Duration) *string {
	if d == nil {
		return nil
	}
	s := d.String()
	if *d%(24*time.Hour) == 0 {
		s = strconv.FormatInt(int64(*d/(24*time.Hour)), 10) + "d"
	}
	return &s
}

// SetRetention sets how long the tenant's rows, results, markers, cache
// entries and feed lines are kept, nil for no limit (scope admin), and
// returns the account. The scheduler's retention purger removes what is
// older (docs/personal-data.md).
func (s *Service) SetRetention(ctx context.Context, p Principal, window *time.Duration) (Account, error) {
	if err := p.Require(domain.ScopeAdmin); err != nil {
		return Account{}, err
	}
	if window != nil && *window < MinRetention {
		return Account{}, invalidParam("retention", "retention is shorter than the minimum of %s", MinRetention)
	}
	set, err := s.store.SetRetention(ctx, p.Tenant, p.KeyID, window)
	if err != nil {
		return Account{}, err
	}
	return s.account(ctx, set)
}
