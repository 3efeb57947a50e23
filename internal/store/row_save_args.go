package store

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
)

// saveArgs are SaveOutcomes' parameters, one array per column.
type saveArgs struct {
	ids        []int64
	states     []string
	reasons    []string
	lastErrors []string
	next       []*time.Time
	inc        []int32
	found      []string
	stages     []string
	anyMatch   []bool
	p          struct {
		rowID                                                             []int64
		source                                                            []string
		fromCache                                                         []bool
		url, name, headline, company, role, location, size, industry, raw []string
		tech                                                              []*string
		fetched                                                           []time.Time
	}
	e struct {
		rowID                   []int64
		source, url, email, raw []string
		status                  []*string
		fromCache, verified     []bool
		confidence              []float64
		fetched                 []time.Time
	}
	ph struct {
		rowID                                                []int64
		source, url, phones, primaryNumber, primaryType, raw []string
		fromCache                                            []bool
		fetched                                              []time.Time
	}
	n struct {
		rowID         []int64
		stage, source []string
		fromCache     []bool
		checked       []time.Time
	}
	s struct {
		rowID []int64
		hash  [][]byte
	}
	c struct {
		rowID      []int64
		stage, key []string
		matched    []bool
		result     []*string
		fetched    []time.Time
	}
}

// joinStages is the stages as one comma-separated text (SaveOutcomes splits
// it again in SQL: a text[] per row does not fit an unnest of one array per column).
func joinStages(stages []domain.Stage) string {
	var b strings.Builder
	for i, s := range stages {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(string(s))
	}
	return b.String()
}

func (a *saveArgs) rows(outs []Outcome) {
	n := len(outs)
	a.ids = make([]int64, n)
	a.states = make([]string, n)
	a.reasons = make([]string, n)
	a.lastErrors = make([]string, n)
	a.next = make([]*time.Time, n)
	a.inc = make([]int32, n)
	a.found = make([]string, n)
	a.stages = make([]string, n)
	a.anyMatch = make([]bool, n)
	for i, o := range outs {
		a.ids[i] = o.RowID
		a.states[i] = string(o.State)
		a.reasons[i] = o.Reason
		a.lastErrors[i] = o.LastError
		if !o.NextAttemptAt.IsZero() {
			t := o.NextAttemptAt
			a.next[i] = &t
		}
		if o.FailedAttempt {
			a.inc[i] = 1
		}
		a.found[i] = o.FoundProfileURL
		a.stages[i] = joinStages(o.StagesDone)
		a.anyMatch[i] = o.AnyMatch
		a.results(o)
	}
}

// results takes what o found: its results by kind, its person's hashes and
// its no-match markers, each by the row's id.
func (a *saveArgs) results(o Outcome) {
	src := o.Prov.Source
	if src == "" {
		src = "vendor"
	}
	if p := o.Profile; p != nil {
		var tech *string
		if p.Technographics != nil {
			b, _ := json.Marshal(p.Technographics)
			t := string(b)
			tech = &t
		}
		a.p.rowID = append(a.p.rowID, o.RowID)
		a.p.source = append(a.p.source, src)
		a.p.fromCache = append(a.p.fromCache, o.Prov.FromCache)
		a.p.url = append(a.p.url, p.ProfileURL)
		a.p.name = append(a.p.name, p.Name)
		a.p.headline = append(a.p.headline, p.Headline)
		a.p.company = append(a.p.company, p.Company)
		a.p.role = append(a.p.role, p.Role)
		a.p.location = append(a.p.location, p.Location)
		a.p.size = append(a.p.size, p.CompanySize)
		a.p.industry = append(a.p.industry, p.Industry)
		a.p.tech = append(a.p.tech, tech)
		a.p.raw = append(a.p.raw, string(jsonOrEmpty(p.Raw)))
		a.p.fetched = append(a.p.fetched, o.Prov.FetchedAt)
	}
	if e := o.Email; e != nil {
		a.e.rowID = append(a.e.rowID, o.RowID)
		a.e.source = append(a.e.source, src)
		a.e.fromCache = append(a.e.fromCache, o.Prov.FromCache)
		a.e.url = append(a.e.url, e.ProfileURL)
		a.e.email = append(a.e.email, e.Email)
		a.e.confidence = append(a.e.confidence, e.Confidence)
		a.e.verified = append(a.e.verified, e.Verified)
		var status *string
		if e.Status != "" {
			status = &e.Status
		}
		a.e.status = append(a.e.status, status)
		a.e.raw = append(a.e.raw, string(jsonOrEmpty(e.Raw)))
		a.e.fetched = append(a.e.fetched, o.Prov.FetchedAt)
	}
	if p := o.Phone; p != nil {
		a.ph.rowID = append(a.ph.rowID, o.RowID)
		a.ph.source = append(a.ph.source, src)
		a.ph.fromCache = append(a.ph.fromCache, o.Prov.FromCache)
		a.ph.url = append(a.ph.url, p.ProfileURL)
		a.ph.phones = append(a.ph.phones, string(jsonOrArray(p.Phones)))
		a.ph.primaryNumber = append(a.ph.primaryNumber, p.PrimaryNumber)
		a.ph.primaryType = append(a.ph.primaryType, p.PrimaryType)
		a.ph.raw = append(a.ph.raw, string(jsonOrEmpty(p.Raw)))
		a.ph.fetched = append(a.ph.fetched, o.Prov.FetchedAt)
	}
	for _, h := range o.PersonHashes {
		a.s.rowID = append(a.s.rowID, o.RowID)
		a.s.hash = append(a.s.hash, h)
	}
	for _, st := range o.NoMatches {
		a.n.rowID = append(a.n.rowID, o.RowID)
		a.n.stage = append(a.n.stage, string(st))
		a.n.source = append(a.n.source, src)
		a.n.fromCache = append(a.n.fromCache, o.Prov.FromCache)
		a.n.checked = append(a.n.checked, o.Prov.FetchedAt)
	}
}

// cache takes the cache entries as they are: SaveOutcomes keeps one per
// key, the newest, of the rows whose outcome it writes.
func (a *saveArgs) cache(cache []CacheEntry) {
	for _, c := range cache {
		var result *string
		if c.Matched {
			r := string(jsonOrEmpty(c.Result))
			result = &r
		}
		a.c.rowID = append(a.c.rowID, c.RowID)
		a.c.stage = append(a.c.stage, string(c.Stage))
		a.c.key = append(a.c.key, c.Key)
		a.c.matched = append(a.c.matched, c.Matched)
		a.c.result = append(a.c.result, result)
		a.c.fetched = append(a.c.fetched, c.FetchedAt)
	}
}
