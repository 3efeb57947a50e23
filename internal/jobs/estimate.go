package jobs

import (
	"context"
	"math"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/store"
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
	Credits    struct {
		Min int64 `json:"min"` // every email and phone lookup misses
		Max int64 `json:"max"` // every lookup hits, at the dearest price
	} `json:"credits"`
	Seconds float64 `json:"seconds"` // at the configured vendor rate
}

// estimateBatch is how many cache keys one query checks.
const estimateBatch = 5000

// Estimate parses the upload as Submit would and prices it without storing
// anything, by the vendor key's price list (what its answers showed, else
// the cost table): a lookup costs at least its cheapest outcome (by the
// table: a profile search is charged hit or miss, an email or phone miss
// nothing) and at most its dearest. Inputs answered by the tenant's cache
// cost nothing.
func (s *Submitter) Estimate(ctx context.Context, sub Submission) (Estimate, error) {
	learned, err := s.Store.VendorPrices(ctx, s.Account)
	if err != nil {
		return Estimate{}, err
	}
	book := enrich.NewPriceBook(s.Costs, learnedPrices(learned))
	want := map[domain.Stage]bool{}
	for _, l := range sub.Options.Lookups {
		want[l] = true
	}
	type input struct {
		kind      domain.InputKind
		url       string // given profile URL
		profiled  bool   // the profile stage runs
		cachedURL string // profile URL known from the cache
	}
	inputs := map[string]*input{}
	var order []string
	est := Estimate{DryRun: true}
	suppressed, err := s.suppressor(ctx, sub.Tenant)
	if err != nil {
		return Estimate{}, err
	}
	err = sub.Feed(func(l ingest.Lookup) error {
		est.Rows++
		if suppressed != nil && suppressed(l) != "" {
			est.Suppressed++
			return nil
		}
		r := store.Row{Kind: l.Kind, ProfileURL: l.ProfileURL, Name: l.Name, Company: l.Company, Domain: l.Domain, Email: l.Email}
		k := cacheKey(domain.StageProfile, r)
		if _, ok := inputs[k]; !ok {
			inputs[k] = &input{kind: l.Kind, url: l.ProfileURL,
				profiled: want[domain.StageProfile] || (l.Kind != domain.InputProfileURL && (want[domain.StageEmail] || want[domain.StagePhone]))}
			order = append(order, k)
		}
		return nil
	})
	if err != nil {
		return Estimate{}, err
	}
	est.Distinct = len(order)

	// Which profile answers are cached.
	newer := time.Now().Add(-sub.Options.MaxAge)
	cachedProfile := map[string]bool{}
	if sub.Options.MaxAge > 0 {
		for i := 0; i < len(order); i += estimateBatch {
			batch := order[i:min(len(order), i+estimateBatch)]
			hits, err := s.Store.CachedAnswers(ctx, sub.Tenant, domain.StageProfile, batch, newer)
			if err != nil {
				return Estimate{}, err
			}
			for k, h := range hits {
				cachedProfile[k] = true
				if a, err := decodeCached(domain.StageProfile, h); err == nil && a.profile != nil {
					inputs[k].cachedURL = a.profile.ProfileURL
				}
			}
		}
	}
	// Email and phone answers cached for known profile URLs.
	urlCached := map[domain.Stage]map[string]bool{domain.StageEmail: {}, domain.StagePhone: {}}
	if sub.Options.MaxAge > 0 {
		var urls []string
		for _, k := range order {
			if u := knownURL(inputs[k].url, inputs[k].cachedURL); u != "" {
				urls = append(urls, "url:"+u)
			}
		}
		for _, stage := range []domain.Stage{domain.StageEmail, domain.StagePhone} {
			if !want[stage] {
				continue
			}
			for i := 0; i < len(urls); i += estimateBatch {
				hits, err := s.Store.CachedAnswers(ctx, sub.Tenant, stage, urls[i:min(len(urls), i+estimateBatch)], newer)
				if err != nil {
					return Estimate{}, err
				}
				for k := range hits {
					urlCached[stage][k] = true
				}
			}
		}
	}

	profileCalls, singleCalls := 0, 0
	for _, k := range order {
		in := inputs[k]
		cached := true
		if in.profiled && !cachedProfile[k] {
			cached = false
			profileCalls++
			lo, hi := book.ProfileRange(in.kind)
			est.Credits.Min += lo
			est.Credits.Max += hi
		}
		url := knownURL(in.url, in.cachedURL)
		for _, stage := range []domain.Stage{domain.StageEmail, domain.StagePhone} {
			if !want[stage] || (url != "" && urlCached[stage]["url:"+url]) {
				continue
			}
			if url == "" && in.profiled && cachedProfile[k] {
				continue // the cache says no profile: nothing to look up
			}
			cached = false
			lo, hi := book.Range(stage)
			est.Credits.Max += hi
			est.Credits.Min += lo
			if !s.Bulk || !in.profiled || cachedProfile[k] {
				singleCalls++ // bulk calls carry the later stages of the rows they look up
			}
		}
		if cached {
			est.Cached++
		}
	}
	if s.Bulk {
		est.Calls = int(math.Ceil(float64(profileCalls)/float64(enrich.MaxBulkRows))) + singleCalls
	} else {
		est.Calls = profileCalls + singleCalls
	}
	rps := s.VendorRPS
	if rps <= 0 {
		rps = 10
	}
	est.Seconds = math.Round(float64(est.Calls)/rps*10) / 10
	return est, nil
}

func knownURL(given, cached string) string {
	if given != "" {
		return given
	}
	return cached
}
