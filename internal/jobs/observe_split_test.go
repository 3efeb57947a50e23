package jobs_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich/enrichtest"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
)

// recordingOrder asks in the configured order and records what it is told.
type recordingOrder struct {
	mu      sync.Mutex
	obs     []jobs.Observation
	queries []jobs.OrderQuery
}

func (o *recordingOrder) Order(_ context.Context, q jobs.OrderQuery) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queries = append(o.queries, q)
	return slices.Clone(q.Vendors)
}

func (o *recordingOrder) Observe(_ context.Context, obs []jobs.Observation) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.obs = append(o.obs, obs...)
	return nil
}

// A bulk call that buys the profile and the email of its rows teaches each
// stage what it cost: the profile stage its searches (2 credits each, hit
// or miss), the email stage the emails; the stages add up to the bill, and
// an email not looked up (no profile found) is not an ask.
func TestBulkChargeNeverInflatesTheProfileRate(t *testing.T) {
	t.Parallel()
	for _, bulk := range []bool{true, false} {
		t.Run(map[bool]string{true: "bulk", false: "single"}[bulk], func(t *testing.T) {
			t.Parallel()
			opts := enrichtest.DefaultPDLOptions()
			opts.Knows = func(enrichtest.Lookup) bool { return false }
			r := newWaterfallRig(t, opts)
			job := r.b.Submit(t, people("split", 40), ingest.JobOptions{Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}})
			o := &recordingOrder{}
			runRounds(t, r.b, r.processor(t, []string{"seed", "pdl"}, jobs.ProcessorConfig{Orderer: o, Bulk: bulk, BulkSize: 100}), job.ID, 2)
			r.b.WaitJob(t, job.ID, domain.JobCompleted)
			if bulk && r.b.Vendor.Stats().ByEndpoint["bulk"] == 0 {
				t.Fatalf("no bulk call: %+v", r.b.Vendor.Stats())
			}
			o.mu.Lock()
			defer o.mu.Unlock()
			var profiles, profilesFound, emails, emailCredits, total int64
			for _, ob := range o.obs {
				if ob.Vendor != "seed" {
					continue
				}
				if ob.Tenant != "acme" {
					t.Errorf("observation of tenant %q, want acme", ob.Tenant)
				}
				total += ob.Credits
				switch ob.Stage {
				case domain.StageProfile:
					profiles++
					if ob.Found {
						profilesFound++
					}
					if ob.Credits != enrichtest.SeedCostProfileBySearch {
						t.Errorf("a profile search observed at %d credits, want %d (its search alone)", ob.Credits, enrichtest.SeedCostProfileBySearch)
					}
				case domain.StageEmail:
					emails++
					emailCredits += ob.Credits
				}
			}
			if profiles != 40 || profilesFound == 0 || emailCredits == 0 {
				t.Fatalf("%d profile asks (%d found), email credits %d", profiles, profilesFound, emailCredits)
			}
			if emails != profilesFound {
				t.Errorf("%d email asks observed, want %d (one per profile found)", emails, profilesFound)
			}
			if billed := r.b.Vendor.TotalCharged(); total != billed {
				t.Errorf("the seed's observed credits add up to %d, its bill is %d", total, billed)
			}
		})
	}
}

// syncingOrder is a recordingOrder that is told before each chunk which
// tenant's rows come (jobs.OrderSyncer).
type syncingOrder struct {
	recordingOrder
	synced []string
}

func (o *syncingOrder) Sync(_ context.Context, tenant string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.synced = append(o.synced, tenant)
	return nil
}

// Before each chunk the Orderer reads what every worker taught it of the
// chunk's tenant (before any row of it is ordered), so that a job that
// follows another orders by what the first taught.
func TestChunkSyncsTheTenantsOrder(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultPDLOptions()
	r := newWaterfallRig(t, opts)
	job := r.b.Submit(t, people("sync", 5), ingest.JobOptions{})
	o := &syncingOrder{}
	runRounds(t, r.b, r.processor(t, []string{"seed", "pdl"}, jobs.ProcessorConfig{Orderer: o}), job.ID, 1)
	r.b.WaitJob(t, job.ID, domain.JobCompleted)
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.synced) == 0 || o.synced[0] != "acme" || len(o.obs) == 0 {
		t.Errorf("synced %v, %d observations; want acme's chunk synced", o.synced, len(o.obs))
	}
}

// The order of a row's profile stage weighs every stage the job wants: a
// job asking profile and email orders its rows' profile stage for both
// (the email is bought with the profile at some vendors), not for the
// profile alone.
func TestOrderWeighsEveryStageWanted(t *testing.T) {
	t.Parallel()
	opts := enrichtest.DefaultPDLOptions()
	opts.Knows = func(enrichtest.Lookup) bool { return false }
	r := newWaterfallRig(t, opts)
	job := r.b.Submit(t, people("stages", 5), ingest.JobOptions{Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}})
	o := &recordingOrder{}
	runRounds(t, r.b, r.processor(t, []string{"seed", "pdl"}, jobs.ProcessorConfig{Orderer: o}), job.ID, 1)
	r.b.WaitJob(t, job.ID, domain.JobCompleted)
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.queries) < 5 {
		t.Fatalf("%d order queries for 5 rows", len(o.queries))
	}
	for _, q := range o.queries[:5] {
		if !slices.Equal(q.Stages, []domain.Stage{domain.StageProfile, domain.StageEmail}) {
			t.Errorf("a row's first order asked for stages %v; want [profile email]", q.Stages)
		}
	}
}
