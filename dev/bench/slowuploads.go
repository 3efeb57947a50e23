package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"
	"time"
)

// slowUploads: four uploads trickle their rows (a row every 100 ms, about
// 3 s each: the tenant's four upload slots) to an API whose Postgres pool
// has four connections, while a status poll after another goes. An upload
// holds no connection while its body arrives, so the polls answer in
// milliseconds; when uploads held one, every poll waited for them to end
// (seconds). The figure is the polls' p99 (internal/httpapi's
// TestSlowUploadsDoNotStarvePolls checks only that polls are answered
// while the uploads go).
func (b *bench) slowUploads(ctx context.Context) error {
	const uploads, rowsEach, rowEvery = 4, 30, 100 * time.Millisecond
	for rep := range b.opts.repeat {
		ctx, cancel := context.WithTimeout(ctx, b.opts.timeout)
		err := func() error {
			st, err := b.startStack(ctx, stackSpec{name: "slowuploads", apiPool: 4})
			if err != nil {
				return err
			}
			defer b.report.rss("slowuploads", st)
			defer st.stop()
			b.logf("slowuploads %d/%d: %d uploads of %d rows, a row every %s, on an API pool of 4", rep+1, b.opts.repeat, uploads, rowsEach, rowEvery)
			job, err := st.submitCSV(ctx, jobQuery("polled"), bytesReader(csvBytes(1, "poll")), -1)
			if err != nil {
				return err
			}
			var wg sync.WaitGroup
			errs := make(chan error, uploads)
			for i := range uploads {
				pr, pw := io.Pipe()
				wg.Go(func() {
					defer pw.Close()
					fmt.Fprintf(pw, "ref,company,crm_owner\nslow-%d-0,Slow %d-0 Ltd,owner\n", i, i)
					for j := 1; j < rowsEach; j++ {
						time.Sleep(rowEvery)
						if _, err := fmt.Fprintf(pw, "slow-%d-%d,Slow %d-%d Ltd,owner\n", i, j, i, j); err != nil {
							return
						}
					}
				})
				wg.Go(func() {
					_, err := st.submitBody(ctx, jobQuery(fmt.Sprintf("slow-%d", i)), pr, -1, "text/csv")
					if err != nil {
						errs <- fmt.Errorf("upload %d: %w", i, err)
					}
					pr.Close()
				})
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			time.Sleep(3 * rowEvery) // let every upload reach the API
			var took []time.Duration
			for polling := true; polling; {
				t0 := time.Now()
				if _, err := st.status(ctx, job.ID); err != nil {
					return err
				}
				took = append(took, time.Since(t0))
				select {
				case <-done:
					polling = false
				default:
				}
			}
			close(errs)
			if err := errors.Join(drain(errs)...); err != nil {
				return err
			}
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			p := func(q float64) float64 {
				return float64(took[min(len(took)-1, int(math.Ceil(q*float64(len(took))))-1)].Microseconds()) / 1000
			}
			b.report.add("slowuploads.p99", sample{Value: p(0.99),
				Detail: fmt.Sprintf("p50 %.1f ms, max %.1f ms; %d polls during %d uploads of %d rows", p(0.5), p(1), len(took), uploads, rowsEach)})
			b.logf("slowuploads: p50 %.1f ms, p99 %.1f ms, max %.1f ms over %d polls", p(0.5), p(0.99), p(1), len(took))
			return nil
		}()
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

func drain(ch <-chan error) []error {
	var out []error
	for err := range ch {
		out = append(out, err)
	}
	return out
}
