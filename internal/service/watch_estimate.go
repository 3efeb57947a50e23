package service

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/store"
)

// checkNewWatch checks what CreateWatch and EstimateWatch ask alike (not
// the callback) and returns the period.
func (s *Service) checkNewWatch(nw NewWatch) (time.Duration, error) {
	every, err := ParseWatchEvery(nw.Every)
	if err != nil {
		return 0, err
	}
	if nw.MonthlyCapCredits == nil || *nw.MonthlyCapCredits < 0 {
		return 0, invalidParam("monthly_cap_credits", "monthly_cap_credits must be a whole number >= 0")
	}
	for _, l := range nw.Lookups {
		if !l.Lookup() {
			return 0, invalidParam("lookups", "lookup %q is not one of profile, email, phone, verify", clip(string(l)))
		}
	}
	if slices.Contains(nw.Lookups, domain.StageVerify) && !slices.Contains(nw.Lookups, domain.StageEmail) {
		// As a job's: verify checks the emails the run finds.
		return 0, invalidParam("lookups", "verify checks the emails the watch finds: ask email too")
	}
	if err := s.checkVerify(ingest.JobOptions{Lookups: nw.Lookups}); err != nil {
		return 0, err
	}
	return every, nil
}

// EstimateWatch is what CreateWatch would answer as the month's estimate,
// without making the watch (scope read): the page and MCP show it to be
// confirmed first. The job must be the tenant's and finished.
func (s *Service) EstimateWatch(ctx context.Context, p Principal, nw NewWatch) (WatchEstimate, error) {
	if err := p.Require(domain.ScopeRead); err != nil {
		return WatchEstimate{}, err
	}
	every, err := s.checkNewWatch(nw)
	if err != nil {
		return WatchEstimate{}, err
	}
	inputs, lookups, err := s.store.JobWatchInputs(ctx, p.Tenant, nw.JobID)
	if errors.Is(err, store.ErrJobNotFinished) {
		return WatchEstimate{}, &ConflictError{Code: "job_not_finished", Message: "a watch is made from a finished job: wait for it to finish"}
	}
	if err != nil {
		return WatchEstimate{}, notFound("job", err)
	}
	if nw.Lookups != nil {
		lookups = nw.Lookups
	}
	return s.watchEstimate(ctx, inputClasses(inputs), lookups, every, *nw.MonthlyCapCredits)
}

// inputClasses counts a job's would-be watch inputs by class, as the store's
// WatchInputClasses counts a watch's.
func inputClasses(inputs []store.WatchInput) []store.WatchInputClass {
	idx := map[store.WatchInputClass]int{}
	var out []store.WatchInputClass
	for _, in := range inputs {
		c := store.WatchInputClass{Kind: in.Kind, URL: in.ProfileURL != "",
			Role: in.Role != "" && strings.EqualFold(strings.TrimSpace(in.Name), strings.TrimSpace(in.Role))}
		i, ok := idx[c]
		if !ok {
			i = len(out)
			idx[c] = i
			out = append(out, c)
		}
		out[i].Inputs++
	}
	return out
}
