package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The waterfall scenario: two fake vendors whose finds differ by segment
// (the seed's finds people at .com domains, the PDL-shaped one at .fr and
// .de, its credits worth 3 of the seed's), one list mixing the segments,
// asking profile and email, with bulk calls on and then off. For each: the
// units per matched row of auto after one learning job (the measured job
// runs right after it, on the same worker, with no wait), of each fixed
// order, and of the best order per segment (each segment's rows run with
// each fixed order, the cheaper kept). Every case has a stack and a tenant
// of its own: nothing is answered from another case's cache.

// The fakes of the scenario, as the flags of fakevendor and fakepdl say.
var (
	wfSeedRates = map[string]float64{"com": 0.85, "fr": 0.25, "de": 0.25}
	wfPDLRates  = map[string]float64{"com": 0.1, "fr": 0.8, "de": 0.8}
	wfSegments  = []string{"com", "fr", "de"}
	wfOrders    = [][]string{{"seed", "pdl"}, {"pdl", "seed"}}
)

func rateFlag(m map[string]float64) string {
	var parts []string
	for _, seg := range wfSegments {
		parts = append(parts, fmt.Sprintf("%s=%g", seg, m[seg]))
	}
	return strings.Join(parts, ",")
}

// wfVendorsFile: both fakes with the given order (nil: auto), their bulk
// endpoints on or off.
func wfVendorsFile(seedURL, pdlURL string, order []string, bulk bool) string {
	o := "auto"
	if order != nil {
		o = "[" + strings.Join(order, ", ") + "]"
	}
	return fmt.Sprintf(`vendors:
  - name: seed
    kind: seed
    url: %[1]s
    key_env: BENCH_SEED_KEY
    rate: 1000
    burst: 50
    bulk: %[4]v
  - name: pdl
    kind: pdl
    url: %[2]s
    key_env: BENCH_PDL_KEY
    rate: 1000
    burst: 50
    bulk: %[4]v
    credit_value: 3
order: %[3]s
explore: 0.05
`, seedURL, pdlURL, o, bulk)
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

func (r wfResult) plus(o wfResult) wfResult {
	return wfResult{units: r.units + o.units, matched: r.matched + o.matched, rows: r.rows + o.rows}
}

// ratio is r's units per matched row ÷ base's (0 when either matched none).
func (r wfResult) ratio(base wfResult) float64 {
	if r.perMatch() == 0 || base.perMatch() == 0 {
		return 0
	}
	return r.perMatch() / base.perMatch()
}

// wfBestPerSegment is, of each fixed order's results segment by segment
// (perSeg[order][i] for wfSegments[i]), the least units per matched row of
// each segment, summed, and the order that gave it per segment.
func wfBestPerSegment(perSeg map[string][]wfResult) (wfResult, map[string]string) {
	var best wfResult
	orders := map[string]string{}
	for i, seg := range wfSegments {
		var pick wfResult
		for j, order := range wfOrders {
			k := strings.Join(order, ",")
			if i >= len(perSeg[k]) {
				continue
			}
			if r := perSeg[k][i]; j == 0 || r.perMatch() < pick.perMatch() {
				pick, orders[seg] = r, k
			}
		}
		best = best.plus(pick)
	}
	return best, orders
}

// wfBestFixed is the fixed order of least units per matched row over the
// whole list, and its name.
func wfBestFixed(fixed map[string]wfResult) (wfResult, string) {
	var best wfResult
	key := ""
	for _, order := range wfOrders {
		k := strings.Join(order, ",")
		if key == "" || fixed[k].perMatch() < best.perMatch() {
			best, key = fixed[k], k
		}
	}
	return best, key
}

func (b *bench) waterfall(ctx context.Context) error {
	n := b.scaled(600, 30)
	for rep := range b.opts.repeat {
		for _, bulk := range []bool{true, false} {
			ctx, cancel := context.WithTimeout(ctx, b.opts.timeout)
			err := b.waterfallOnce(ctx, n, rep, bulk)
			cancel()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *bench) waterfallOnce(ctx context.Context, n, rep int, bulk bool) error {
	mode := map[bool]string{true: "bulk", false: "single"}[bulk]
	fakes := &stack{b: b, logDir: filepath.Join(b.opts.logDir, fmt.Sprintf("waterfall-%s-fakes-%d", mode, rep)), rss: map[string]int64{}}
	if err := os.MkdirAll(fakes.logDir, 0o755); err != nil {
		return err
	}
	defer fakes.stop()
	seedURL, err := fakes.start(ctx, "fakevendor", os.Environ(), "fakevendor listening on ",
		"-addr", "127.0.0.1:0", "-keys", "bench-seed-key", "-profile-hit-rates", rateFlag(wfSeedRates), "-email-hit-rate", "0.6",
		"-log-level", "warn")
	if err != nil {
		return err
	}
	pdlURL, err := fakes.start(ctx, "fakepdl", os.Environ(), "fakepdl listening on ",
		"-addr", "127.0.0.1:0", "-keys", "bench-pdl-key", "-segment-hit-rates", rateFlag(wfPDLRates), "-no-profile-rate", "0",
		"-work-email-rate", "0.7")
	if err != nil {
		return err
	}
	keys := []string{"BENCH_SEED_KEY=bench-seed-key", "BENCH_PDL_KEY=bench-pdl-key"}
	list := wfList(n, "")
	file := func(name string, order []string) string {
		return writeTemp(fakes.logDir, name+".yaml", []byte(wfVendorsFile(seedURL, pdlURL, order, bulk)))
	}
	// run starts a stack with a vendors file, runs each list in turn on
	// the same worker, one job after the other, and stops it.
	run := func(name string, order []string, lists ...[]wfRow) ([]wfResult, error) {
		st, err := b.startStack(ctx, stackSpec{name: "waterfall-" + mode + "-" + name, worker: true, scheduler: true,
			vendorsFile: file(name, order), env: keys})
		if err != nil {
			return nil, err
		}
		defer b.report.rss("waterfall", st)
		defer st.stop()
		var out []wfResult
		for _, rows := range lists {
			q := jobQuery("waterfall " + name)
			q.Set("lookups", "profile,email")
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
			if order == nil {
				b.logVendors(ctx, st, filepath.Join(fakes.logDir, fmt.Sprintf("vendors-after-job-%d.json", len(out))))
			}
		}
		return out, nil
	}

	// auto: a learning job on another list of the same mix, then the list.
	autoRes, err := run("auto", nil, wfList(n, "learn"), list)
	if err != nil {
		return fmt.Errorf("auto: %w", err)
	}
	learn, auto := autoRes[0], autoRes[1]
	// Each fixed order, segment by segment (one job each): the order's
	// total, and per segment the cheaper order's.
	bySeg := map[string][]wfRow{}
	for _, r := range list {
		bySeg[r.seg] = append(bySeg[r.seg], r)
	}
	segLists := make([][]wfRow, len(wfSegments))
	for i, seg := range wfSegments {
		segLists[i] = bySeg[seg]
	}
	fixed := map[string]wfResult{}
	perSeg := map[string][]wfResult{}
	for _, order := range wfOrders {
		key := strings.Join(order, ",")
		res, err := run("fixed-"+strings.Join(order, "-"), order, segLists...)
		if err != nil {
			return fmt.Errorf("[%s]: %w", key, err)
		}
		perSeg[key] = res
		for _, r := range res {
			fixed[key] = fixed[key].plus(r)
		}
	}
	best, bestOrders := wfBestPerSegment(perSeg)
	bestFixed, bestFixedKey := wfBestFixed(fixed)
	bestText, _ := json.Marshal(bestOrders)
	b.logf("waterfall (%s, profile+email): auto %s (learning job %s); [seed,pdl] %s; [pdl,seed] %s; best per segment %s %s; "+
		"auto ÷ best per segment %.3f, ÷ best fixed [%s] %.3f",
		mode, auto, learn, fixed["seed,pdl"], fixed["pdl,seed"], bestText, best, auto.ratio(best), bestFixedKey, auto.ratio(bestFixed))
	detail := fmt.Sprintf("%d rows (name+domain and email at .com, .fr, .de), profile and email, bulk %v; auto after one learning job, no wait: %s; "+
		"learning job: %s; [seed, pdl]: %s; [pdl, seed]: %s", n, bulk, auto, learn, fixed["seed,pdl"], fixed["pdl,seed"])
	b.report.add("waterfall."+mode+".ratio", sample{Value: auto.ratio(best), Detail: detail,
		Baseline: best.perMatch(), BaseText: fmt.Sprintf("best order per segment (measured) %s: %s", bestText, best)})
	b.report.add("waterfall."+mode+".fixed", sample{Value: auto.ratio(bestFixed), Detail: detail,
		Baseline: bestFixed.perMatch(), BaseText: fmt.Sprintf("best fixed order [%s]: %s", bestFixedKey, bestFixed)})
	return nil
}

// logVendors writes what GET /v1/vendors shows the tenant to path, and
// logs the order auto takes for profile and email per segment.
func (b *bench) logVendors(ctx context.Context, st *stack, path string) {
	resp, err := st.get(ctx, "/v1/vendors")
	if err != nil {
		b.logf("waterfall: GET /v1/vendors: %v", err)
		return
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return
	}
	_ = os.WriteFile(path, body.Bytes(), 0o644)
	var v struct {
		Segments []struct {
			Segment string `json:"segment"`
			Asked   int64  `json:"asked"`
			Orders  []struct {
				Stages         []string `json:"stages"`
				Order          []string `json:"order"`
				ExpectedCharge float64  `json:"expected_charge"`
			} `json:"orders"`
		} `json:"segments"`
	}
	if json.Unmarshal(body.Bytes(), &v) != nil {
		return
	}
	var parts []string
	for _, sg := range v.Segments {
		for _, o := range sg.Orders {
			if strings.Join(o.Stages, ",") == "profile,email" {
				parts = append(parts, fmt.Sprintf("%s (%d asks) %v %.2f", sg.Segment, sg.Asked, o.Order, o.ExpectedCharge))
			}
		}
	}
	b.logf("waterfall: GET /v1/vendors, profile+email orders: %s (%s)", strings.Join(parts, "; "), path)
}
