package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
)

// chargedMisses runs issue 30's scenario against a vendor that prices by
// outcome and charges its misses: a worker SIGKILLed 3 s after the submit,
// Redis flushed at 5 s, a new worker started in the killed one's place. The
// lost calls are settled by the prices the vendor's answers showed (and the
// balance witness), so that the job's spend is the bill when it completes.
func (e *env) chargedMisses(ctx context.Context, ph *phase) error {
	t0 := time.Now()
	if err := e.submit(ctx, ph, 0); err != nil {
		return err
	}
	at := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(t0.Add(d))):
			return nil
		}
	}
	if err := at(3 * time.Second); err != nil {
		return err
	}
	p, err := e.progress(ctx, ph.jobID)
	if err != nil {
		return err
	}
	if p.done() {
		ph.fail("the job ended before the worker could be killed: raise -charged-misses-rows or lower -charged-misses-rps")
	}
	e.workers[0].Kill()
	if err := at(5 * time.Second); err != nil {
		return err
	}
	q, _ := e.progress(ctx, ph.jobID)
	before, _ := e.asynqTasks(ctx)
	if err := e.rdb.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("FLUSHALL: %w", err)
	}
	if err := e.startWorker(ctx, 0); err != nil {
		return fmt.Errorf("a new worker: %w", err)
	}
	ph.note("worker 1 SIGKILLed at 3s (%.0f%% of rows terminal, %d claimed), FLUSHALL at 5s (%.0f%%, %d tasks lost), a new worker started",
		p.pct(), p.inFlight, q.pct(), before)
	if err := e.waitJob(ctx, ph); err != nil {
		return err
	}
	e.noteInferred(ctx, ph)
	e.notePrices(ctx, ph)
	return nil
}

func (e *env) sigkill(ctx context.Context, ph *phase) error {
	var held []string
	for i := range e.o.kills {
		p, mid, err := e.waitMid(ctx, ph, 0.1*float64(i+1))
		if err != nil || !mid {
			return err
		}
		w := i % len(e.workers)
		e.workers[w].Kill()
		held = append(held, fmt.Sprintf("%d", p.inFlight))
		if err := e.startWorker(ctx, w); err != nil {
			return fmt.Errorf("restart worker %d: %w", w+1, err)
		}
		// Let the job move before the next kill.
		_ = poll(ctx, 30*time.Second, func() (bool, error) {
			q, err := e.progress(ctx, ph.jobID)
			return err == nil && (q.done() || q.terminal > p.terminal), err
		})
	}
	ph.note("killed %d times (worker 1, 2, 1...) with %s rows in flight (both workers'), each restarted at once",
		e.o.kills, strings.Join(held, ", "))
	ph.post = func(ph *phase) {
		f := ph.figures
		ph.note("%d rows came back after their lease expired; %d reservations of cut calls counted as spent by the scheduler",
			f.LeaseExpired, f.ExpiredReservations)
	}
	return nil
}

// asynqTasks counts the tasks of our queue in Redis.
func (e *env) asynqTasks(ctx context.Context) (int, error) {
	n := 0
	iter := e.rdb.Scan(ctx, 0, "asynq:{"+e.queue+"}:t:*", 1000).Iterator()
	for iter.Next(ctx) {
		n++
	}
	return n, iter.Err()
}

func (e *env) redisFlush(ctx context.Context, ph *phase) error {
	p, mid, err := e.waitMid(ctx, ph, 0.25)
	if err != nil || !mid {
		return err
	}
	before, _ := e.asynqTasks(ctx)
	if err := e.rdb.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("FLUSHALL: %w", err)
	}
	t0 := time.Now()
	var back time.Duration
	err = poll(ctx, e.o.phaseTimeout, func() (bool, error) {
		n, err := e.asynqTasks(ctx)
		if err == nil && n > 0 && back == 0 {
			back = time.Since(t0)
		}
		q, perr := e.progress(ctx, ph.jobID)
		return back > 0 || (perr == nil && q.done()), errors.Join(err, perr)
	})
	if err != nil {
		return err
	}
	if back > 0 {
		ph.note("FLUSHALL at %.0f%% lost %d tasks; the scheduler found the work in Postgres and re-enqueued it %.1fs later",
			p.pct(), before, back.Seconds())
	} else {
		ph.note("FLUSHALL at %.0f%% lost %d tasks; the job ended without a re-enqueue", p.pct(), before)
	}
	return nil
}

func (e *env) pgRestart(ctx context.Context, ph *phase) error {
	p, mid, err := e.waitMid(ctx, ph, 0.25)
	if err != nil || !mid {
		return err
	}
	cut := e.proxy.Down()
	t0 := time.Now()
	// What a client sees while Postgres is down.
	st, _, rerr := httpDo(ctx, http.MethodGet, e.apiURL+"/readyz", "", nil, nil, 15*time.Second)
	readyTook := time.Since(t0)
	t1 := time.Now()
	sst, sbody, serr := httpDo(ctx, http.MethodPost, e.apiURL+"/v1/jobs", "text/csv",
		[]byte("profile_url\nhttps://platform.example/in/during-outage\n"), map[string]string{"Authorization": "Bearer " + apiKey}, 30*time.Second)
	submitTook := time.Since(t1)
	if rest := e.o.pgDown - time.Since(t0); rest > 0 {
		time.Sleep(rest)
	}
	if err := e.proxy.Up(); err != nil {
		return err
	}
	up := time.Now()
	var readyAgain time.Duration
	if err := waitReady(ctx, e.apiURL, time.Minute); err == nil {
		readyAgain = time.Since(up)
	} else {
		ph.fail("the API is not ready a minute after Postgres came back")
	}
	q0, _ := e.progress(ctx, ph.jobID)
	var resumed time.Duration
	_ = poll(ctx, e.o.phaseTimeout, func() (bool, error) {
		q, err := e.progress(ctx, ph.jobID)
		if err == nil && (q.terminal > q0.terminal || q.done()) {
			resumed = time.Since(up)
			return true, nil
		}
		return false, err
	})
	desc := func(st int, err error, took time.Duration) string {
		if err != nil {
			return fmt.Sprintf("error %v after %.1fs", err, took.Seconds())
		}
		return fmt.Sprintf("%d in %.2fs", st, took.Seconds())
	}
	ph.note("Postgres unreachable for %s at %.0f%% (%d connections cut): /readyz %s, a submit %s; ready again %.1fs after, rows finishing again %.1fs after",
		e.o.pgDown, p.pct(), cut, desc(st, rerr, readyTook), desc(sst, serr, submitTook), readyAgain.Seconds(), resumed.Seconds())
	if rerr == nil && st != http.StatusServiceUnavailable {
		ph.fail("/readyz answered %d while Postgres was down, want 503", st)
	}
	if serr == nil && sst/100 != 5 {
		ph.fail("a submit answered %d while Postgres was down: %s", sst, bytes.TrimSpace(sbody))
	}
	if serr == nil && sst != http.StatusServiceUnavailable {
		ph.note("note: the submit during the outage answered %d (%s), not 503 with Retry-After", sst, strings.TrimSpace(string(sbody)))
	}
	ph.post = func(ph *phase) {
		ph.note("%d rows came back after their lease expired; %d reservations counted as spent by the scheduler",
			ph.figures.LeaseExpired, ph.figures.ExpiredReservations)
	}
	return nil
}

func (e *env) storm(ctx context.Context, ph *phase) error {
	p, mid, err := e.waitMid(ctx, ph, 0.2)
	if err != nil || !mid {
		return err
	}
	s0, err := e.vendorStats(ctx)
	if err != nil {
		return err
	}
	if err := e.setVendorFaults(ctx, map[string]any{"rps": e.o.stormRPS, "burst": 1}); err != nil {
		return err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(e.o.storm):
	}
	if err := e.setVendorFaults(ctx, map[string]any{"rps": e.o.vendorRPS, "burst": 2}); err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	s1, err := e.vendorStats(ctx)
	if err != nil {
		return err
	}
	calls := s1.Requests - s0.Requests
	n429 := s1.ByStatus["429"] - s0.ByStatus["429"]
	ph.note("vendor limited to %g req/s for %s at %.0f%%: %d calls (%.1f/s against a configured %g/s), %d answered 429",
		e.o.stormRPS, e.o.storm, p.pct(), calls, float64(calls)/secs, e.o.vendorRPS, n429)
	if float64(calls)/secs > 1.5*e.o.vendorRPS {
		ph.fail("retry storm: %.1f calls/s during the 429 storm, over 1.5x the configured %g/s", float64(calls)/secs, e.o.vendorRPS)
	}
	return nil
}

func (e *env) sigterm(ctx context.Context, ph *phase) error {
	p, mid, err := e.waitMid(ctx, ph, 0.25)
	if err != nil || !mid {
		return err
	}
	bound := e.o.shutdownTimeout + 5*time.Second
	took, clean := e.workers[0].Term(bound)
	// The calls whose reservation is open when the worker is gone: its own
	// cut calls are among them (the other worker's settle in a moment).
	open := map[int64]bool{}
	if entries, err := e.db.LedgerEntries(ctx, ph.jobID); err == nil {
		for _, le := range entries {
			if le.Status == "reserved" {
				open[le.ID] = true
			}
		}
	}
	exit := "exit 0"
	if !clean {
		exit = fmt.Sprintf("%v", e.workers[0].Err())
	}
	if err := e.startWorker(ctx, 0); err != nil {
		return err
	}
	ph.note("SIGTERM at %.0f%% with %d rows in flight (both workers'): worker 1 stopped in %.1fs (%s; ENRICHQ_SHUTDOWN_TIMEOUT %s)",
		p.pct(), p.inFlight, took.Seconds(), exit, e.o.shutdownTimeout)
	if !clean || took > e.o.shutdownTimeout+2*time.Second {
		ph.fail("the worker did not stop cleanly within its shutdown timeout (%s): %.1fs, %s", e.o.shutdownTimeout, took.Seconds(), exit)
	}
	ph.post = func(ph *phase) {
		f := ph.figures
		var cut int
		entries, _ := e.db.LedgerEntries(context.Background(), ph.jobID)
		for _, le := range entries {
			if open[le.ID] && strings.HasPrefix(le.Error, "reservation expired") {
				cut++
			}
		}
		ph.note("rows it left behind to lease expiry: %d; calls open when it was gone and never settled (counted as spent at expiry): %d of %d",
			f.LeaseExpired, cut, len(open))
		if f.LeaseExpired > 0 || cut > 0 {
			ph.fail("a graceful stop must release the rows it did not start and persist the calls in flight: %d rows waited for their lease, %d calls were not settled",
				f.LeaseExpired, cut)
		}
	}
	return nil
}

func (e *env) checkPoison(ctx context.Context, ph *phase) error {
	var total, rejected, others, maxAtt int
	var reason string
	const page = 1000
	for after := int64(0); ; {
		rows, err := e.db.ListResults(ctx, ph.jobID, "", after, page)
		if err != nil {
			return err
		}
		for _, r := range rows {
			after = r.RowID
			byVendor := strings.HasPrefix(r.StateReason, "vendor rejected")
			if !strings.HasPrefix(r.Company, poison) {
				if byVendor {
					others++
				}
				continue
			}
			if total == 0 {
				reason = r.StateReason
			}
			total++
			maxAtt = max(maxAtt, r.Attempts)
			if r.State == domain.RowFailed && byVendor {
				rejected++
			}
		}
		if len(rows) < page {
			break
		}
	}
	ph.note("%d/%d poison rows failed at once with the vendor's message (%q), retried at most %d times; other rows failed by them: %d",
		rejected, total, reason, maxAtt, others)
	if rejected != total || maxAtt > 0 || others > 0 {
		ph.fail("poison rows: %d of %d rejected, %d retries, %d other rows failed by them", rejected, total, maxAtt, others)
	}
	return nil
}

// retriedSubmit is a client that sends a submit, gives up waiting for the
// answer (a timeout), and sends it again with the same Idempotency-Key,
// twice at once and once more after.
func (e *env) retriedSubmit(ctx context.Context, ph *phase) error {
	key := "chaos-retry-" + e.stamp
	body := uploadCSV(e.tag(ph), e.o.rows, 0)
	path := e.submitPath(ph)
	hdr := map[string]string{"Authorization": "Bearer " + apiKey, "Idempotency-Key": key}

	// The first attempt: the whole request is sent, the answer never read.
	u, _ := url.Parse(e.apiURL)
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nIdempotency-Key: %s\r\nContent-Type: text/csv\r\nContent-Length: %d\r\n\r\n",
		path, u.Host, apiKey, key, len(body))
	_, _ = conn.Write(body)
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	first := "timed out after 20ms"
	if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
		first = "answered " + strconv.Itoa(resp.StatusCode) + " before the client gave up"
		resp.Body.Close()
	}
	conn.Close()

	type answer struct {
		status   int
		id       string
		replayed bool
	}
	var mu sync.Mutex
	var answers []answer
	send := func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.apiURL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "text/csv")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		a := answer{}
		if err == nil {
			var js struct {
				ID string `json:"id"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&js)
			resp.Body.Close()
			a = answer{status: resp.StatusCode, id: js.ID, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
		}
		mu.Lock()
		answers = append(answers, a)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(send)
	}
	wg.Wait()
	send()

	jobs, err := e.db.JobsWithIdempotencyKey(ctx, key)
	if err != nil {
		return err
	}
	var got []string
	ids := map[string]bool{}
	for _, a := range answers {
		s := strconv.Itoa(a.status)
		if a.replayed {
			s += " (replayed)"
		}
		got = append(got, s)
		ids[a.id] = true
	}
	ph.note("first submit %s; 3 retries with the same Idempotency-Key answered %s: %d job(s) stored", first, strings.Join(got, ", "), len(jobs))
	if len(jobs) != 1 {
		ph.fail("%d jobs stored for one Idempotency-Key", len(jobs))
		if len(jobs) == 0 {
			return errors.New("no job stored")
		}
	}
	if len(ids) != 1 || !ids[jobs[0]] {
		ph.fail("the retries named jobs %v, want only %s", ids, jobs[0])
	}
	ph.jobID, ph.expected = jobs[0], e.o.rows
	return nil
}
