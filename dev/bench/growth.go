package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/enrichq/enrichq/internal/maintenance"
	"github.com/enrichq/enrichq/internal/store"
)

// Growth (issues 40 and 41): one tenant grown through the pipeline (the
// fake vendor without latency) to each of -growth-sizes rows, and at each
// size what a user and the leader feel: status and feed pages, a fresh
// upload and its download right after it finished (no ANALYZE between), an
// erasure, the retention purge of another tenant's job with the first
// tenant's polls during it, an idle sweep round and a deep page. The
// figures at each size go in a table of their own beside the targets,
// with each one's ratio to the first size's.

// growthKeys are the figures of a growth step, in the table's order.
var growthKeys = []struct {
	key, name, unit, target string
	higher                  bool
}{
	{"status_p99", "status poll p99", "ms", "", false},
	{"feed_p99", "feed page (1,000 lines) p99", "ms", "", false},
	{"upload", "fresh upload → 201", "s", "", false},
	{"download", "its download right after it finished", "s", "100k < 5 s, 1M < 60 s", false},
	{"download_rate", "download rows/s", "rows/s", "", true},
	{"download_rss", "API peak RSS during the download", "MB", "", false},
	{"largest_download", "download of the largest job", "s", "1M-row job < 60 s", false},
	{"erasure", "an erasure of a person of 10 rows → receipt", "s", "< 1 s", false},
	{"erasure_shared", "an erasure of a found email (the fake's are shared) → receipt", "s", "", false},
	{"erasure_rows", "that person's rows", "rows", "", false},
	{"erasure_per_row", "its time per row of the person", "ms", "", false},
	{"purge_rate", "retention purge rows/s (another tenant's job)", "rows/s", "≥ 10,000 rows/s", true},
	{"purge_poll_p99", "status poll p99 during the purge", "ms", "< 20 ms", false},
	{"sweep", "idle retention sweep round", "ms", "< 50 ms", false},
	{"deep_page", "deep page (1,000 rows mid-job of the largest job)", "ms", "< 100 ms at 1M", false},
}

// growJobRows is the most rows a growth job carries: a list of about 35
// bytes a row, under the API's 64 MiB body limit.
const growJobRows = 1_000_000

// growthStep is what was measured at one size.
type growthStep struct {
	Rows    int                `json:"rows"`
	Figures map[string]float64 `json:"figures"`
	Detail  map[string]string  `json:"detail,omitempty"`
}

func (b *bench) growth(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, b.opts.timeout)
	defer cancel()
	fresh := b.scaled(100_000, 200)
	purgeRows := b.scaled(100_000, 200)
	keyB := "bench-purge-key-" + b.runID
	spec := ceilingSpec("growth", false)
	spec.apiEnv = []string{"ENRICHQ_ERASURE_KEY=bench-erasure-key-0123456789abcdef0123456789"}
	// A second tenant, whose jobs retention purges.
	spec.moreKeys = []string{"bench-purge-" + b.runID + ":" + keyB}
	st, err := b.startStack(ctx, spec)
	if err != nil {
		return err
	}
	defer b.report.rss("growth", st)
	defer st.stop()
	stB := *st
	stB.apiKey = keyB
	if err := stB.liftLimits(ctx); err != nil {
		return err
	}
	if err := patchAccount(ctx, &stB, `{"retention": "1h"}`); err != nil {
		return err
	}
	db, err := store.Open(ctx, st.dbURL, store.Options{MaxConns: 2})
	if err != nil {
		return err
	}
	defer db.Close()

	have, largest, largestRows := 0, "", 0
	for i, size := range b.opts.growthSizes {
		size = b.scaled(size, fresh)
		step := growthStep{Rows: size, Figures: map[string]float64{}, Detail: map[string]string{}}
		// Grow through the pipeline to the size, the fresh upload included,
		// in jobs the API's body limit takes.
		for part := 0; size-fresh-have > 0; part++ {
			grow := min(size-fresh-have, growJobRows)
			b.logf("growth: %d → %d rows (a job of %d)", have, have+grow, grow)
			_, job, err := b.runJobStatus(ctx, st, grow, fmt.Sprintf("growth-%d-%d", i, part), 250*time.Millisecond)
			if err != nil {
				return err
			}
			have += grow
			if grow > largestRows {
				largest, largestRows = job.ID, grow
			}
		}
		start := time.Now()
		body := csvBytes(fresh, fmt.Sprintf("g%d", i))
		up, err := st.submitCSV(ctx, jobQuery(fmt.Sprintf("growth-fresh-%d", i)), bytesReader(body), int64(len(body)))
		if err != nil {
			return err
		}
		step.Figures["upload"] = time.Since(start).Seconds()
		if _, _, err := st.waitJob(ctx, up.ID, 100*time.Millisecond); err != nil {
			return err
		}
		have += fresh
		if fresh > largestRows {
			largest, largestRows = up.ID, fresh
		}
		b.logf("growth %d rows: fresh upload %.2f s; its download next", have, step.Figures["upload"])
		resetPeakRSS(st.pid("api"))
		took, lines, err := download(ctx, st, up.ID)
		if err != nil {
			return err
		}
		if lines != fresh {
			return fmt.Errorf("the download of job %s gave %d lines, want %d", up.ID, lines, fresh)
		}
		step.Figures["download"] = took.Seconds()
		step.Figures["download_rate"] = float64(lines) / took.Seconds()
		step.Figures["download_rss"] = float64(peakRSS(st.pid("api"))) / 1024

		if largest != up.ID {
			// Its rows now: an erasure of an earlier size may have removed some.
			now, err := st.status(ctx, largest)
			if err != nil {
				return err
			}
			took, lines, err := download(ctx, st, largest)
			if err != nil {
				return err
			}
			if lines != now.Rows["total"] {
				return fmt.Errorf("the download of job %s gave %d lines, want %d", largest, lines, now.Rows["total"])
			}
			step.Figures["largest_download"] = took.Seconds()
		} else {
			step.Figures["largest_download"] = step.Figures["download"]
		}
		step.Detail["largest_download"] = fmt.Sprintf("job of %d rows", largestRows)
		// 1,000 polls: of 200, the p99 was the second slowest, one blip.
		if step.Figures["status_p99"], err = pollP99(ctx, st, up.ID, 1000, 0); err != nil {
			return err
		}
		if step.Figures["feed_p99"], err = feedP99(ctx, st, 2*have, 20); err != nil {
			return err
		}
		if step.Figures["deep_page"], err = deepPage(ctx, st, largest, largestRows); err != nil {
			return err
		}
		step.Detail["deep_page"] = fmt.Sprintf("job of %d rows", largestRows)
		// A person of personRows rows, listed at this size for the purpose:
		// the erasure at a person's size that does not grow with the tenant.
		person := fmt.Sprintf("erased-%s-%d@person.bench.example", b.runID, i)
		if err := listPerson(ctx, st, person, fmt.Sprintf("growth-person-%d", i)); err != nil {
			return err
		}
		var rows int64
		if step.Figures["erasure"], rows, err = eraseEmail(ctx, st, person); err != nil {
			return err
		}
		if rows != personRows {
			return fmt.Errorf("the erasure of %s removed %d rows, want %d", person, rows, personRows)
		}
		// The fake finds one of its emails for many rows: a found email's
		// person grows with the tenant, and the erasure with the person.
		email, err := foundEmail(ctx, st, up.ID)
		if err != nil {
			return err
		}
		if step.Figures["erasure_shared"], rows, err = eraseEmail(ctx, st, email); err != nil {
			return err
		}
		step.Figures["erasure_rows"] = float64(rows)
		step.Figures["erasure_per_row"] = step.Figures["erasure_shared"] * 1000 / float64(max(rows, 1))

		// The purge: another tenant's job, due once the clock is 2 h on,
		// removed by the purger's steps back to back while this tenant polls.
		if _, _, err := b.runJobStatus(ctx, &stB, purgeRows, fmt.Sprintf("growth-purge-%d", i), 250*time.Millisecond); err != nil {
			return err
		}
		purger := maintenance.NewRetentionPurger(db, maintenance.RetentionPurgerConfig{Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
		pctx, stopPolls := context.WithCancel(ctx)
		var polls []time.Duration
		var wg sync.WaitGroup
		wg.Go(func() { polls = pollFor(pctx, st, up.ID, 50) })
		start = time.Now()
		removed := 0
		for {
			n, err := purger.Step(ctx)
			if err != nil {
				stopPolls()
				wg.Wait()
				return fmt.Errorf("purge: %w", err)
			}
			if n == 0 {
				break
			}
			removed += n
		}
		purgeTook := time.Since(start)
		stopPolls()
		wg.Wait()
		step.Figures["purge_rate"] = float64(purgeRows) / purgeTook.Seconds()
		step.Figures["purge_poll_p99"] = percentileMs(polls, 0.99)
		step.Detail["purge_rate"] = fmt.Sprintf("%d rows in %.2f s (%d removed in all: rows, results, feed lines, cache)", purgeRows, purgeTook.Seconds(), removed)

		// An idle round: nothing due, at this size.
		var rounds []time.Duration
		for range 5 {
			t0 := time.Now()
			if _, err := purger.Step(ctx); err != nil {
				return err
			}
			rounds = append(rounds, time.Since(t0))
		}
		step.Figures["sweep"] = percentileMs(rounds, 0.5)
		b.logf("growth %d rows: %s", have, step.summary())
		b.report.Growth = append(b.report.Growth, step)
	}
	b.report.addGrowth()
	return nil
}

func (s growthStep) summary() string {
	var parts []string
	for _, g := range growthKeys {
		parts = append(parts, fmt.Sprintf("%s %s", g.key, formatValue(s.Figures[g.key], g.unit)))
	}
	return strings.Join(parts, ", ")
}

func patchAccount(ctx context.Context, s *stack, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, s.apiURL+"/v1/account", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	req.Header.Set("Content-Type", "application/json")
	return do(req, http.StatusOK, nil)
}

func (s *stack) get(ctx context.Context, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.apiURL+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	resp, err := httpClient.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	return resp, err
}

// download reads a job's results as one ndjson download and counts its lines.
func download(ctx context.Context, s *stack, id string) (time.Duration, int, error) {
	start := time.Now()
	resp, err := s.get(ctx, "/v1/jobs/"+id+"/results?format=ndjson")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	lines := 0
	r := bufio.NewReaderSize(resp.Body, 256<<10)
	for {
		_, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, lines, fmt.Errorf("download of job %s cut off after %d lines: %w", id, lines, err)
		}
		lines++
	}
	return time.Since(start), lines, nil
}

// pollP99 polls a job's status n times, one after another, at most rate a
// second (0: as fast as answered), and returns the p99 in ms.
func pollP99(ctx context.Context, s *stack, id string, n int, rate float64) (float64, error) {
	var ds []time.Duration
	for range n {
		t0 := time.Now()
		if _, err := s.status(ctx, id); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t0))
		if rate > 0 {
			time.Sleep(time.Duration(float64(time.Second) / rate))
		}
	}
	return percentileMs(ds, 0.99), nil
}

// pollFor polls a job's status rate times a second until ctx ends.
func pollFor(ctx context.Context, s *stack, id string, rate float64) []time.Duration {
	var ds []time.Duration
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ds
		case <-tick.C:
		}
		t0 := time.Now()
		if _, err := s.status(ctx, id); err != nil {
			return ds
		}
		ds = append(ds, time.Since(t0))
	}
}

// feedP99 reads n feed pages of 1,000 lines from positions spread over
// [0, upTo) and returns the p99 in ms.
func feedP99(ctx context.Context, s *stack, upTo, n int) (float64, error) {
	var ds []time.Duration
	for i := range n {
		since := i * upTo / n
		t0 := time.Now()
		resp, err := s.get(ctx, "/v1/results?limit=1000&since="+strconv.Itoa(since))
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t0))
	}
	return percentileMs(ds, 0.99), nil
}

// deepPage reads the page of 1,000 rows from the middle of a job of rows
// rows: its cursor is the row id of the job's first row (from a page of
// one) plus half the rows (a job's rows are copied in one go). It returns
// the best of three in ms.
func deepPage(ctx context.Context, s *stack, id string, rows int) (float64, error) {
	resp, err := s.get(ctx, "/v1/jobs/"+id+"/results?limit=1")
	if err != nil {
		return 0, err
	}
	var first struct {
		NextCursor *string `json:"next_cursor"`
	}
	err = json.NewDecoder(resp.Body).Decode(&first)
	resp.Body.Close()
	if err != nil || first.NextCursor == nil {
		return 0, fmt.Errorf("first page of job %s: no cursor (%v)", id, err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(*first.NextCursor)
	if err != nil {
		return 0, err
	}
	rowID, err := strconv.ParseInt(strings.TrimPrefix(string(raw), "r"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cursor %q: %w", raw, err)
	}
	cursor := base64.RawURLEncoding.EncodeToString([]byte("r" + strconv.FormatInt(rowID+int64(rows/2), 10)))
	best := time.Duration(1 << 62)
	for range 3 {
		t0 := time.Now()
		resp, err := s.get(ctx, "/v1/jobs/"+id+"/results?limit=1000&cursor="+url.QueryEscape(cursor))
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		best = min(best, time.Since(t0))
	}
	return float64(best) / float64(time.Millisecond), nil
}

// personRows is the rows of the person the growth erases at each size.
const personRows = 10

// listPerson runs a job of personRows rows naming email, which no other
// row names.
func listPerson(ctx context.Context, s *stack, email, name string) error {
	body := []byte("ref,email\n" + strings.Repeat("person,"+email+"\n", personRows))
	job, err := s.submitCSV(ctx, url.Values{"name": {name}, "lookups": {"profile"}}, bytesReader(body), int64(len(body)))
	if err != nil {
		return err
	}
	done, _, err := s.waitJob(ctx, job.ID, 100*time.Millisecond)
	if err != nil {
		return err
	}
	if done.Rows["total"] != personRows {
		return fmt.Errorf("the person's job %s has %d rows, want %d", job.ID, done.Rows["total"], personRows)
	}
	return nil
}

// foundEmail is the email of a random matched row of job id.
func foundEmail(ctx context.Context, s *stack, id string) (string, error) {
	resp, err := s.get(ctx, "/v1/jobs/"+id+"/results?limit=1000&state=matched")
	if err != nil {
		return "", err
	}
	var page struct {
		Results []struct {
			Email *string `json:"email"`
		} `json:"results"`
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if err != nil {
		return "", err
	}
	var emails []string
	for _, r := range page.Results {
		if r.Email != nil {
			emails = append(emails, *r.Email)
		}
	}
	if len(emails) == 0 {
		return "", fmt.Errorf("job %s: no email found to erase", id)
	}
	return emails[rand.IntN(len(emails))], nil
}

// eraseEmail erases the person named by email and returns the time to the
// receipt and the person's rows it removed.
func eraseEmail(ctx context.Context, s *stack, email string) (float64, int64, error) {
	body, _ := json.Marshal(map[string]string{"email": email})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.apiURL+"/v1/erasures", strings.NewReader(string(body)))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	req.Header.Set("Content-Type", "application/json")
	var receipt struct {
		Receipt map[string]int64 `json:"receipt"`
	}
	t0 := time.Now()
	if err := do(req, http.StatusCreated, &receipt); err != nil {
		return 0, 0, err
	}
	return time.Since(t0).Seconds(), receipt.Receipt["job_rows"], nil
}

// resetPeakRSS starts a process's VmHWM again from its RSS now (Linux).
func resetPeakRSS(pid int) {
	if pid > 0 {
		_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
	}
}

func percentileMs(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := min(len(s)-1, int(p*float64(len(s))))
	return float64(s[i]) / float64(time.Millisecond)
}

// addGrowth records the absolute targets of the largest size as lines of
// the main table.
func (r *report) addGrowth() {
	if len(r.Growth) == 0 {
		return
	}
	last := r.Growth[len(r.Growth)-1]
	d := fmt.Sprintf("at %s rows", groupThousands(int64(last.Rows)))
	r.add("growth.download", sample{Value: last.Figures["download"], Detail: d})
	r.add("growth.purge", sample{Value: last.Figures["purge_rate"], Detail: d + "; " + last.Detail["purge_rate"]})
	r.add("growth.erasure", sample{Value: last.Figures["erasure"], Detail: fmt.Sprintf("%s, a person of %d rows", d, personRows)})
	r.add("growth.sweep", sample{Value: last.Figures["sweep"], Detail: d})
	r.add("growth.deep_page", sample{Value: last.Figures["deep_page"], Detail: d + ", " + last.Detail["deep_page"]})
}

// printGrowth writes the growth table: every figure at each size, and its
// ratio to the first size's (target: within 2×).
func (r *report) printGrowth(w io.Writer) {
	if len(r.Growth) == 0 {
		return
	}
	fmt.Fprintf(w, "\nGrowth: one tenant through the pipeline\n\n| Figure |")
	for _, s := range r.Growth {
		fmt.Fprintf(w, " %s rows |", groupThousands(int64(s.Rows)))
	}
	fmt.Fprintf(w, " last ÷ first | Target |\n|---|")
	for range r.Growth {
		fmt.Fprintf(w, "---|")
	}
	fmt.Fprintf(w, "---|---|\n")
	first, last := r.Growth[0], r.Growth[len(r.Growth)-1]
	for _, g := range growthKeys {
		fmt.Fprintf(w, "| %s |", g.name)
		for _, s := range r.Growth {
			fmt.Fprintf(w, " %s |", formatValue(s.Figures[g.key], g.unit))
		}
		ratio := last.Figures[g.key] / first.Figures[g.key]
		if g.higher {
			ratio = first.Figures[g.key] / last.Figures[g.key] // how many times worse
		}
		target := "within 2× of the first"
		if g.target != "" {
			target = g.target + "; " + target
		}
		fmt.Fprintf(w, " %.2f× |  %s |\n", ratio, target)
	}
}
