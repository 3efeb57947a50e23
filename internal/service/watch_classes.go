package service

import (
	"context"
	"strconv"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/vendororder"
)

// estimateClasses prices a run of a watch's inputs, counted by class (the
// store's WatchInputClasses), as Estimate prices an upload's distinct
// inputs: each class once, times its inputs. The cache is not asked: a run
// buys again every answer older than the watch's period, which each is by
// the time the next run comes. vendors are the waterfall, as estimate's.
func (s *Submitter) estimateClasses(ctx context.Context, lookups []domain.Stage, classes []store.WatchInputClass, vendors []vendororder.Vendor) (Estimate, error) {
	p, err := s.newEstimatePass(ctx, vendors)
	if err != nil {
		return Estimate{}, err
	}
	for _, l := range lookups {
		p.want[l] = true
	}
	p.est.DryRun = true
	for i, c := range classes {
		in := &estimateInput{kind: c.Kind, role: c.Role, n: c.Inputs, profiled: p.profiled(c.Kind)}
		if c.URL {
			in.url = "given" // priced as known; never a cache key (no cache pass)
		}
		k := strconv.Itoa(i)
		p.inputs[k] = in
		p.order = append(p.order, k)
		p.est.Rows += c.Inputs
		p.est.Distinct += c.Inputs
	}
	p.cachedProfile = map[string]bool{}
	p.urlCached = map[domain.Stage]map[string]bool{domain.StageEmail: {}, domain.StagePhone: {}}
	s.price(&p)
	return p.est, nil
}
