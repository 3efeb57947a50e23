package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The waterfall scenario: two fake vendors whose truth differs by segment
// (the seed's finds people at .com domains, the PDL-shaped one at .fr and
// .de), one list mixing the segments, profile stage; the units per matched
// row of auto (cold: its priors; warm: after a worker restart, ordering by
// what the cold job taught it), of each static order, and of the best order
// per segment computed from the fakes' truth (each segment's rows run with
// that order). Every case has a stack and a tenant of its own: nothing is
// answered from another case's cache.

// vendorTruth is what a fake finds and how it bills, in budget units.
type vendorTruth struct {
	name     string
	rates    map[string]float64 // hit rate by segment (the input's TLD)
	perAsk   float64            // units per ask, hit or miss
	perMatch float64            // units per match
}

// orderCost is one row of segment seg asked in order until a vendor finds
// it: its expected units and the probability it is found (the vendors'
// truths are independent).
func orderCost(order []vendorTruth, seg string) (units, found float64) {
	miss := 1.0
	for _, v := range order {
		p := v.rates[seg]
		units += miss * (v.perAsk + p*v.perMatch)
		miss *= 1 - p
	}
	return units, 1 - miss
}

// bestOrders is, per segment, the order of vendors with the least expected
// units per matched row; on a tie, the first in permutation order.
func bestOrders(vendors []vendorTruth, segments []string) map[string][]string {
	out := map[string][]string{}
	for _, seg := range segments {
		best, bestPer := []string(nil), 0.0
		for _, order := range permutations(vendors) {
			units, found := orderCost(order, seg)
			if found == 0 {
				continue
			}
			if per := units / found; best == nil || per < bestPer {
				best, bestPer = names(order), per
			}
		}
		out[seg] = best
	}
	return out
}

func permutations(vs []vendorTruth) [][]vendorTruth {
	if len(vs) <= 1 {
		return [][]vendorTruth{slices.Clone(vs)}
	}
	var out [][]vendorTruth
	for i := range vs {
		rest := append(slices.Clone(vs[:i]), vs[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]vendorTruth{vs[i]}, p...))
		}
	}
	return out
}

func names(vs []vendorTruth) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.name
	}
	return out
}

// The fakes of the scenario, as the flags of fakevendor and fakepdl say and
// as vendorTruth says for bestOrders.
var (
	wfSeedRates = map[string]float64{"com": 0.85, "fr": 0.25, "de": 0.25}
	wfPDLRates  = map[string]float64{"com": 0.1, "fr": 0.8, "de": 0.8}
	wfTruth     = []vendorTruth{
		{name: "seed", rates: wfSeedRates, perAsk: 2}, // 2 credits a profile search, hit or miss; credit_value 1
		{name: "pdl", rates: wfPDLRates, perMatch: 3}, // 1 credit a match, credit_value 3
	}
	wfSegments = []string{"com", "fr", "de"}
)

func rateFlag(m map[string]float64) string {
	var parts []string
	for _, seg := range wfSegments {
		parts = append(parts, fmt.Sprintf("%s=%g", seg, m[seg]))
	}
	return strings.Join(parts, ",")
}

// wfVendorsFile: both fakes with the given order (nil: auto).
func wfVendorsFile(seedURL, pdlURL string, order []string) string {
	o := "auto"
	if order != nil {
		o = "[" + strings.Join(order, ", ") + "]"
	}
	return fmt.Sprintf(`vendors:
  - name: seed
    kind: seed
    url: %s
    key_env: BENCH_SEED_KEY
    rate: 1000
    burst: 50
  - name: pdl
    kind: pdl
    url: %s
    key_env: BENCH_PDL_KEY
    rate: 1000
    burst: 50
    credit_value: 3
order: %s
explore: 0.05
`, seedURL, pdlURL, o)
}

// wfRow is one person of the list and its segment.
type wfRow struct {
	line, seg string
}

// wfList is n people mixing name+domain and email inputs at .com, .fr and
// .de domains, in turn; salt makes another list of the same mix.
func wfList(n int, salt string) []wfRow {
	out := make([]wfRow, n)
	for i := range n {
		seg := wfSegments[i%len(wfSegments)]
		dom := fmt.Sprintf("firm%s%d.%s", salt, i, seg)
		if (i/len(wfSegments))%2 == 0 {
			out[i] = wfRow{fmt.Sprintf("w%s%05d,Person %d,%s,", salt, i, i, dom), seg}
		} else {
			out[i] = wfRow{fmt.Sprintf("w%s%05d,,,person.%d@%s", salt, i, i, dom), seg}
		}
	}
	return out
}

func wfCSV(rows []wfRow) []byte {
	var b bytes.Buffer
	b.WriteString("ref,name,domain,email\n")
	for _, r := range rows {
		b.WriteString(r.line + "\n")
	}
	return b.Bytes()
}

// wfResult is what one case spent (units) and matched.
type wfResult struct {
	units, matched, rows int64
}

func (r wfResult) perMatch() float64 {
	if r.matched == 0 {
		return 0
	}
	return float64(r.units) / float64(r.matched)
}

func (r wfResult) String() string {
	return fmt.Sprintf("%.2f units/match (%d units, %d of %d matched)", r.perMatch(), r.units, r.matched, r.rows)
}

func (b *bench) waterfall(ctx context.Context) error {
	n := b.scaled(600, 30)
	for rep := range b.opts.repeat {
		ctx, cancel := context.WithTimeout(ctx, b.opts.timeout)
		err := b.waterfallOnce(ctx, n, rep)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) waterfallOnce(ctx context.Context, n, rep int) error {
	fakes := &stack{b: b, logDir: filepath.Join(b.opts.logDir, fmt.Sprintf("waterfall-fakes-%d", rep)), rss: map[string]int64{}}
	if err := os.MkdirAll(fakes.logDir, 0o755); err != nil {
		return err
	}
	defer fakes.stop()
	seedURL, err := fakes.start(ctx, "fakevendor", os.Environ(), "fakevendor listening on ",
		"-addr", "127.0.0.1:0", "-keys", "bench-seed-key", "-profile-hit-rates", rateFlag(wfSeedRates), "-log-level", "warn")
	if err != nil {
		return err
	}
	pdlURL, err := fakes.start(ctx, "fakepdl", os.Environ(), "fakepdl listening on ",
		"-addr", "127.0.0.1:0", "-keys", "bench-pdl-key", "-segment-hit-rates", rateFlag(wfPDLRates), "-no-profile-rate", "0")
	if err != nil {
		return err
	}
	keys := []string{"BENCH_SEED_KEY=bench-seed-key", "BENCH_PDL_KEY=bench-pdl-key"}
	list := wfList(n, "")
	file := func(name string, order []string) string {
		return writeTemp(fakes.logDir, name+".yaml", []byte(wfVendorsFile(seedURL, pdlURL, order)))
	}
	// run starts a stack with a vendors file, runs each list in turn (the
	// worker restarted between them), and stops it.
	run := func(name string, order []string, lists ...[]wfRow) ([]wfResult, error) {
		st, err := b.startStack(ctx, stackSpec{name: "waterfall-" + name, worker: true, scheduler: true,
			vendorsFile: file(name, order), env: keys})
		if err != nil {
			return nil, err
		}
		defer b.report.rss("waterfall", st)
		defer st.stop()
		var out []wfResult
		for i, rows := range lists {
			if i > 0 {
				if err := st.restartWorker(ctx); err != nil {
					return nil, err
				}
			}
			q := jobQuery("waterfall " + name)
			q.Set("lookups", "profile")
			q.Del("roles")
			job, err := st.submitCSV(ctx, q, bytes.NewReader(wfCSV(rows)), -1)
			if err != nil {
				return nil, err
			}
			done, _, err := st.waitJob(ctx, job.ID, 50*time.Millisecond)
			if err != nil {
				return nil, err
			}
			if done.State != "completed" {
				return nil, fmt.Errorf("job %s ended %s", done.ID, done.State)
			}
			out = append(out, wfResult{units: done.Credits.Spent, matched: int64(done.Rows["matched"]), rows: int64(done.Rows["total"])})
		}
		return out, nil
	}

	// auto: cold on a warm-up list of the same mix, then warm on the list.
	autoRes, err := run("auto", nil, wfList(n, "warm"), list)
	if err != nil {
		return fmt.Errorf("auto: %w", err)
	}
	cold, warm := autoRes[0], autoRes[1]
	static := map[string]wfResult{}
	for _, order := range [][]string{{"seed", "pdl"}, {"pdl", "seed"}} {
		key := strings.Join(order, ",")
		r, err := run("static-"+strings.Join(order, "-"), order, list)
		if err != nil {
			return fmt.Errorf("[%s]: %w", key, err)
		}
		static[key] = r[0]
	}
	// The best order per segment: each segment's rows with its order, the
	// segments sharing an order in one job.
	best := bestOrders(wfTruth, wfSegments)
	byOrder := map[string][]wfRow{}
	for _, r := range list {
		k := strings.Join(best[r.seg], ",")
		byOrder[k] = append(byOrder[k], r)
	}
	var bestRes wfResult
	for _, k := range slices.Sorted(mapKeys(byOrder)) {
		r, err := run("best-"+strings.ReplaceAll(k, ",", "-"), strings.Split(k, ","), byOrder[k])
		if err != nil {
			return fmt.Errorf("best [%s]: %w", k, err)
		}
		bestRes.units += r[0].units
		bestRes.matched += r[0].matched
		bestRes.rows += r[0].rows
	}
	bestText, _ := json.Marshal(best)
	ratio := 0.0
	if bp := bestRes.perMatch(); bp > 0 {
		ratio = warm.perMatch() / bp
	}
	b.logf("waterfall: auto warm %s, cold %s; [seed,pdl] %s; [pdl,seed] %s; best per segment %s %s",
		warm, cold, static["seed,pdl"], static["pdl,seed"], bestText, bestRes)
	b.report.add("waterfall.ratio", sample{Value: ratio,
		Detail: fmt.Sprintf("%d rows (name+domain and email at .com, .fr, .de); auto after a warm-up job: %s; cold (priors): %s; [seed, pdl]: %s; [pdl, seed]: %s",
			n, warm, cold, static["seed,pdl"], static["pdl,seed"]),
		Baseline: bestRes.perMatch(), BaseText: fmt.Sprintf("best order per segment from the fakes' truth %s: %s", bestText, bestRes)})
	return nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
