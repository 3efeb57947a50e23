package service

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/vendororder"
)

// Estimate is what a job would cost and take, before it is stored: the
// answer of POST /v1/jobs?dry_run=true.
type Estimate struct {
	DryRun bool `json:"dry_run"`
	Rows   int  `json:"rows"` // lookups after role expansion
	// Suppressed are rows of erased people (the suppression list): stored
	// skipped, never looked up, priced at nothing.
	Suppressed int `json:"suppressed"`
	Distinct   int `json:"distinct"` // distinct inputs: duplicates are looked up once
	Cached     int `json:"cached"`   // distinct inputs answered by the cache (within max_age)
	Calls      int `json:"calls"`    // vendor calls at most
	// Verifications are the email checks at most (lookups with verify):
	// one per email a finder may deliver, cached or bought (an invalid one
	// sends the row on to the next finder, whose address is checked too).
	// Counted in Calls and in Credits.Max; none in Credits.Min (a verdict
	// may be free, a miss has none).
	Verifications int `json:"verifications"`
	Credits       struct {
		// With one vendor: Min, every email and phone lookup misses; Max,
		// every lookup hits at the dearest price. With a waterfall of
		// several, in budget units: Min, the first vendor asked answers at
		// its hit price or every vendor misses, the cheaper; Max, every
		// vendor asked and billed its worst.
		Min int64 `json:"min"`
		Max int64 `json:"max"`
	} `json:"credits"`
	Seconds float64 `json:"seconds"` // at the configured vendor rate
}

// Estimate parses the upload (or reads the stored one of sub.UploadID) as
// Submit would and prices it without storing anything (scope submit: an estimate is the first step of spending).
func (s *Service) Estimate(ctx context.Context, p Principal, sub Submission) (Estimate, error) {
	if err := p.Require(domain.ScopeSubmit); err != nil {
		return Estimate{}, err
	}
	release, err := s.parseSlot(ctx, p.Tenant, sub)
	if err != nil {
		return Estimate{}, err
	}
	defer release()
	sub.Tenant = p.Tenant
	if err := s.fromUpload(ctx, p.Tenant, &sub); err != nil {
		return Estimate{}, err
	}
	if err := s.withDefaultBudget(ctx, p.Tenant, &sub); err != nil {
		return Estimate{}, err
	}
	if err := s.checkVendors(sub.Options.Vendors); err != nil {
		return Estimate{}, err
	}
	if err := s.checkVerify(sub.Options); err != nil {
		return Estimate{}, err
	}
	vendors, err := s.estimateVendors(sub.Options.Vendors)
	if err != nil {
		return Estimate{}, err
	}
	return s.submit.estimate(ctx, sub, vendors)
}

// estimateVendors are the waterfall an estimate prices, as the worker
// builds it for a job whose `vendors` option is names (nil: every
// configured vendor); nil with one vendor the API cannot describe
// (ENRICHQ_VENDOR_URL unset here): the submitter's own price list.
func (s *Service) estimateVendors(names []string) ([]vendororder.Vendor, error) {
	if len(s.vendors.List) == 0 {
		return nil, nil
	}
	all, err := s.describedVendors()
	switch {
	case err == nil:
		return jobVendors(all, names), nil
	case len(s.vendors.List) > 1:
		return nil, err
	}
	return nil, nil
}

// estimateBatch is how many cache keys one query checks.
const estimateBatch = 5000

// Estimate parses the upload as Submit would and prices it without storing
// anything, by the vendor key's price list (what its answers showed, else
// the cost table): a lookup costs at least its cheapest outcome (by the
// table: a profile search is charged hit or miss, an email or phone miss
// nothing) and at most its dearest. Inputs answered by the tenant's cache
// cost nothing. It runs in three passes: read the distinct inputs, ask the
// cache about them, price what the cache does not answer.
func (s *Submitter) Estimate(ctx context.Context, sub Submission) (Estimate, error) {
	return s.estimate(ctx, sub, nil)
}

// estimate is Estimate over the job's vendors as the worker builds them
// (nil: the one vendor of s, priced by s.Costs). One vendor whose answers
// teach its prices (enrich.PriceTeacher) is priced by its price book, with
// what its key's answers showed, in budget units; otherwise each row is
// priced across the waterfall of vendors (waterfallRange).
func (s *Submitter) estimate(ctx context.Context, sub Submission, vendors []vendororder.Vendor) (Estimate, error) {
	p, err := s.newEstimatePass(ctx, vendors)
	if err != nil {
		return Estimate{}, err
	}
	p.sub = sub
	for _, l := range sub.Options.Lookups {
		p.want[l] = true
	}
	if err := s.readInputs(ctx, &p); err != nil {
		return Estimate{}, err
	}
	if err := s.askCache(ctx, &p); err != nil {
		return Estimate{}, err
	}
	s.price(&p)
	return p.est, nil
}

// estimatePass is what the passes of an estimate share.
type estimatePass struct {
	sub  Submission
	want map[domain.Stage]bool
	book *enrich.PriceBook
	unit int64 // budget units per credit of book
	// vendors are the job's waterfall; nil: the one vendor, priced by book.
	vendors []vendororder.Vendor
	verify  verifyPrice // what verifying costs with vendors
	inputs  map[string]*estimateInput
	order   []string // the inputs' keys, in upload order
	est     Estimate
	// cachedProfile: keys whose profile answer is cached; urlCached: by
	// stage, the "url:" keys whose email or phone answer is cached.
	cachedProfile map[string]bool
	urlCached     map[domain.Stage]map[string]bool
}

// estimateInput is one distinct input of an estimate.
type estimateInput struct {
	kind      domain.InputKind
	role      bool   // the name is a role title (only a vendor with role search answers it)
	url       string // given profile URL
	profiled  bool   // the profile stage runs
	cachedURL string // profile URL known from the cache
	// n is how many inputs this one stands for (a class of a watch's
	// inputs, estimateClasses); 0 is one.
	n int
}

// weight is how many inputs in stands for.
func (in *estimateInput) weight() int { return max(1, in.n) }

// profiled says whether an input of kind is looked up at the profile
// stage: asked for, or needed to find an email or phone of a person named.
func (p *estimatePass) profiled(kind domain.InputKind) bool {
	return p.want[domain.StageProfile] || (kind != domain.InputProfileURL && (p.want[domain.StageEmail] || p.want[domain.StagePhone]))
}

// readInputs is the first pass: the upload's rows, the suppressed ones, and
// its distinct inputs.
func (s *Submitter) readInputs(ctx context.Context, p *estimatePass) error {
	suppressed, err := jobs.Suppressor(ctx, s.Store, s.ErasureKey, p.sub.Tenant)
	if err != nil {
		return err
	}
	p.est.DryRun = true
	err = p.sub.Feed(func(l ingest.Lookup) error {
		p.est.Rows++
		if suppressed != nil && suppressed(l) != "" {
			p.est.Suppressed++
			return nil
		}
		k := jobs.LookupKey(l)
		if _, ok := p.inputs[k]; !ok {
			p.inputs[k] = &estimateInput{kind: l.Kind, url: l.ProfileURL, role: l.Role != "" && strings.EqualFold(strings.TrimSpace(l.Name), strings.TrimSpace(l.Role)),
				profiled: p.profiled(l.Kind)}
			p.order = append(p.order, k)
		}
		return nil
	})
	p.est.Distinct = len(p.order)
	return err
}

// askCache is the second pass: which profile answers are cached (within
// max_age), then which email and phone answers are cached for the profile
// URLs known.
func (s *Submitter) askCache(ctx context.Context, p *estimatePass) error {
	p.cachedProfile = map[string]bool{}
	p.urlCached = map[domain.Stage]map[string]bool{domain.StageEmail: {}, domain.StagePhone: {}}
	if p.sub.Options.MaxAge <= 0 {
		return nil
	}
	newer := time.Now().Add(-p.sub.Options.MaxAge)
	for i := 0; i < len(p.order); i += estimateBatch {
		batch := p.order[i:min(len(p.order), i+estimateBatch)]
		hits, err := s.Store.CachedAnswers(ctx, p.sub.Tenant, domain.StageProfile, batch, newer)
		if err != nil {
			return err
		}
		for k, h := range hits {
			p.cachedProfile[k] = true
			p.inputs[k].cachedURL = jobs.CachedProfileURL(h)
		}
	}
	var urls []string
	for _, k := range p.order {
		if u := knownURL(p.inputs[k].url, p.inputs[k].cachedURL); u != "" {
			urls = append(urls, "url:"+u)
		}
	}
	for _, stage := range []domain.Stage{domain.StageEmail, domain.StagePhone} {
		if !p.want[stage] {
			continue
		}
		for i := 0; i < len(urls); i += estimateBatch {
			hits, err := s.Store.CachedAnswers(ctx, p.sub.Tenant, stage, urls[i:min(len(urls), i+estimateBatch)], newer)
			if err != nil {
				return err
			}
			for k := range hits {
				p.urlCached[stage][k] = true
			}
		}
	}
	return nil
}

// newEstimatePass is an estimate's pass priced for vendors (nil: the one
// vendor of s, by s.Costs, one unit a credit): one vendor whose answers
// teach its prices is priced by its own book and credit_value, with what its
// key's answers showed; several by the waterfall (waterfallRange).
func (s *Submitter) newEstimatePass(ctx context.Context, vendors []vendororder.Vendor) (estimatePass, error) {
	table, account, unit := s.Costs, s.Account, int64(1)
	if len(vendors) == 1 {
		if t, ok := vendors[0].Adapter.(enrich.PriceTeacher); ok {
			table, unit = t.Book().Table(), max(vendors[0].CreditValue, 1)
			if vendors[0].Account != "" {
				account = vendors[0].Account
			}
			vendors = nil
		}
	}
	learned, err := s.Store.VendorPrices(ctx, account)
	if err != nil {
		return estimatePass{}, err
	}
	return estimatePass{want: map[domain.Stage]bool{}, inputs: map[string]*estimateInput{}, vendors: vendors, verify: verifyPriceOf(vendors),
		book: enrich.NewPriceBook(table, jobs.LearnedPrices(learned)), unit: unit}, nil
}

// price is the third pass: the credits and calls of what the cache does
// not answer, and the time the calls take at the vendor's rate.
func (s *Submitter) price(p *estimatePass) {
	profileCalls, singleCalls := 0, 0
	for _, k := range p.order {
		in := p.inputs[k]
		n := in.weight()
		var (
			stages []domain.Stage // what the vendors are asked for this input
			lo, hi int64
		)
		if in.profiled && !p.cachedProfile[k] {
			profileCalls += n
			stages = append(stages, domain.StageProfile)
			lo, hi = p.book.ProfileRange(in.kind)
		}
		url := knownURL(in.url, in.cachedURL)
		for _, stage := range []domain.Stage{domain.StageEmail, domain.StagePhone} {
			if !p.want[stage] || (url != "" && p.urlCached[stage]["url:"+url]) {
				continue
			}
			if url == "" && in.profiled && p.cachedProfile[k] {
				continue // the cache says no profile: nothing to look up
			}
			stages = append(stages, stage)
			sLo, sHi := p.book.Range(stage)
			lo, hi = lo+sLo, hi+sHi
			if !s.Bulk || !in.profiled || p.cachedProfile[k] {
				singleCalls += n // bulk calls carry the later stages of the rows they look up
			}
		}
		checks, each := p.verifications(slices.Contains(stages, domain.StageEmail), p.want[domain.StageEmail] && url != "" && p.urlCached[domain.StageEmail]["url:"+url])
		p.est.Verifications += checks * n
		singleCalls += checks * n
		if len(stages) == 0 {
			p.est.Cached += n
			p.est.Credits.Max += int64(checks) * each * int64(n)
			continue
		}
		if p.vendors != nil {
			lo, hi = waterfallRange(p.vendors, in, stages)
		}
		if p.vendors == nil {
			lo, hi = lo*p.unit, hi*p.unit
		}
		hi += int64(checks) * each
		p.est.Credits.Min += lo * int64(n)
		p.est.Credits.Max += hi * int64(n)
	}
	if s.Bulk {
		p.est.Calls = int(math.Ceil(float64(profileCalls)/float64(enrich.MaxBulkRows))) + singleCalls
	} else {
		p.est.Calls = profileCalls + singleCalls
	}
	rps := s.VendorRPS
	if rps <= 0 {
		rps = 10
	}
	p.est.Seconds = math.Round(float64(p.est.Calls)/rps*10) / 10
}

func knownURL(given, cached string) string {
	if given != "" {
		return given
	}
	return cached
}
