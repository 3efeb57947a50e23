package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Ingest: a 1,000,000-row CSV uploaded to the API (streaming into COPY);
// the time to its 201, and the API's peak RSS. The baseline is psql's \copy
// of the same file into a table of its three columns.
func (b *bench) ingest(ctx context.Context) error {
	n := b.scaled(1_000_000, 1000)
	path := filepath.Join(b.opts.logDir, fmt.Sprintf("ingest-%d.csv", n))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := companiesCSV(f, n, ""); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	defer os.Remove(path)
	fi, _ := os.Stat(path)
	for rep := range b.opts.repeat {
		if !b.opts.ingestCSV {
			break
		}
		ctx, cancel := context.WithTimeout(ctx, b.opts.timeout)
		err := func() error {
			// The API alone: the upload is the API's and Postgres's work.
			// With -profile, the last run's API is profiled (CPU) over its
			// upload.
			profile := b.opts.profileDir != "" && rep == b.opts.repeat-1
			spec := stackSpec{name: "ingest"}
			if profile {
				spec.apiEnv = []string{"ENRICHQ_METRICS_ADDR=127.0.0.1:0"}
			}
			st, err := b.startStack(ctx, spec)
			if err != nil {
				return err
			}
			defer b.report.rss("ingest", st)
			defer st.stop()
			b.logf("ingest %d/%d: %d rows, %.1f MB", rep+1, b.opts.repeat, n, float64(fi.Size())/1e6)
			rssBefore := peakRSS(st.pid("api"))
			var profiled <-chan error
			if profile {
				profiled = b.profileAPI(ctx, st, "api.ingest.cpu.pprof")
			}
			cpuBefore := cpuTime(st.pid("api"))
			start := time.Now()
			job, err := st.submitFile(ctx, jobQuery("ingest"), path)
			if err != nil {
				return err
			}
			took := time.Since(start)
			cpu := cpuTime(st.pid("api")) - cpuBefore
			if profiled != nil {
				if err := <-profiled; err != nil {
					b.logf("ingest: api profile: %v", err)
				}
			}
			if job.Rows["total"] != n {
				return fmt.Errorf("job has %d rows, want %d", job.Rows["total"], n)
			}
			rss := peakRSS(st.pid("api"))
			// The baseline: psql \copy of the same file, in the same database.
			copyTook, cerr := b.psqlCopy(ctx, st.dbURL, path)
			baseText := "psql \\copy: "
			if cerr != nil {
				baseText += "not measured (" + cerr.Error() + ")"
				b.logf("ingest: psql baseline: %v", cerr)
			} else {
				baseText += fmt.Sprintf("%.2f s (%s rows/s)", copyTook.Seconds(), groupThousands(int64(float64(n)/copyTook.Seconds())))
			}
			b.report.add("ingest.time", sample{Value: took.Seconds(),
				Detail: fmt.Sprintf("%s rows/s, %.0f MB; API CPU %.2f s", groupThousands(int64(float64(n)/took.Seconds())),
					float64(fi.Size())/1e6, cpu.Seconds()),
				Baseline: copyTook.Seconds(), BaseText: baseText})
			b.report.add("ingest.rss", sample{Value: float64(rss) / 1024,
				Detail: fmt.Sprintf("%.0f MB before the upload", float64(rssBefore)/1024)})
			b.logf("ingest: 201 after %.2f s (API CPU %.2f s), api peak RSS %.0f MB; psql \\copy %.2f s (%.2f of the upload's time)",
				took.Seconds(), cpu.Seconds(), float64(rss)/1024, copyTook.Seconds(), copyTook.Seconds()/took.Seconds())
			return nil
		}()
		cancel()
		if err != nil {
			return err
		}
	}
	for _, format := range b.opts.ingestFormats {
		if err := b.ingestFormat(ctx, format, n); err != nil {
			return fmt.Errorf("ingest %s: %w", format, err)
		}
	}
	return nil
}

// ingestFormats are the ingest scenario's formats besides the plain CSV.
var ingestFormats = []string{"windows-1252", "xlsx"}

// ingestFormat uploads the same n companies as a CRM export in format
// (windows-1252: a semicolon CSV as Excel saves it in Germany; xlsx: an Excel
// workbook with shared strings), each run on a fresh API so its peak RSS is
// its own. Every row names a website: n domain lookups.
func (b *bench) ingestFormat(ctx context.Context, format string, n int) error {
	path := filepath.Join(b.opts.logDir, fmt.Sprintf("ingest-%d.%s", n, format))
	contentType := "text/csv"
	switch format {
	case "windows-1252":
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := windows1252CSV(f, n); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	case "xlsx":
		contentType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
		if err := writeXLSX(path, n); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown format %q (want %s)", format, strings.Join(ingestFormats, ", "))
	}
	defer os.Remove(path)
	fi, _ := os.Stat(path)
	// -xlsx-memlimit gives the API a soft memory limit, unless GOMEMLIMIT
	// is set (the .xlsx reader keeps its shared strings on disk, so it
	// should not need one).
	var apiEnv []string
	memNote := ""
	if limit := b.opts.xlsxMemLimit; format == "xlsx" && limit != "" && os.Getenv("GOMEMLIMIT") == "" {
		apiEnv = []string{"GOMEMLIMIT=" + limit}
		memNote = ", GOMEMLIMIT=" + limit
	}
	// The .xlsx is uploaded alone, then -ingest-at-once times at once (its
	// own figures: the API's peak under concurrent uploads).
	runs := []int{1}
	if format == "xlsx" && b.opts.ingestAtOnce > 1 {
		runs = append(runs, b.opts.ingestAtOnce)
	}
	for _, atOnce := range runs {
		for rep := range b.opts.repeat {
			ctx, cancel := context.WithTimeout(ctx, b.opts.timeout)
			err := func() error {
				// -ingest-at-once uploads the file that many times at once,
				// by three tenants at most (as buyers do), each a key of its own.
				spec := stackSpec{name: "ingest", apiEnv: apiEnv}
				var more []string // the other tenants' keys
				for i := 1; i < min(atOnce, 3); i++ {
					key := fmt.Sprintf("bench-ingest-key-%d-%s", i, b.runID)
					spec.moreKeys = append(spec.moreKeys, fmt.Sprintf("bench-ingest-%d-%s:%s", i, b.runID, key))
					more = append(more, key)
				}
				st, err := b.startStack(ctx, spec)
				if err != nil {
					return err
				}
				keys := append([]string{st.apiKey}, more...)
				for i := len(keys); i < atOnce; i++ {
					keys = append(keys, keys[i%3])
				}
				defer b.report.rss("ingest", st)
				defer st.stop()
				b.logf("ingest %s %d/%d: %d rows, %.1f MB, %d at once", format, rep+1, b.opts.repeat, n, float64(fi.Size())/1e6, len(keys))
				rssBefore := peakRSS(st.pid("api"))
				cpuBefore := cpuTime(st.pid("api"))
				start := time.Now()
				jobs := make([]jobStatus, len(keys))
				errs := make([]error, len(keys))
				var wg sync.WaitGroup
				for i, key := range keys {
					as := *st // another tenant's: the same stack, its key
					as.apiKey = key
					wg.Go(func() {
						jobs[i], errs[i] = as.submitFileAs(ctx, jobQuery(fmt.Sprintf("ingest-%s-%d", format, i)), path, contentType)
					})
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					return err
				}
				took := time.Since(start)
				cpu := cpuTime(st.pid("api")) - cpuBefore
				for _, job := range jobs {
					if job.Rows["total"] != n {
						return fmt.Errorf("job has %d rows, want %d", job.Rows["total"], n)
					}
				}
				rss := peakRSS(st.pid("api"))
				metric := "ingest." + format
				if len(keys) > 1 {
					metric += ".at_once" // its own figures: n uploads' time and the API's peak
				}
				b.report.add(metric+".time", sample{Value: took.Seconds(),
					Detail: fmt.Sprintf("%s rows/s, %.0f MB; API CPU %.2f s", groupThousands(int64(float64(n*len(keys))/took.Seconds())),
						float64(fi.Size())/1e6, cpu.Seconds())})
				b.report.add(metric+".rss", sample{Value: float64(rss) / 1024,
					Detail: fmt.Sprintf("%.0f MB before the upload%s", float64(rssBefore)/1024, memNote)})
				b.logf("ingest %s, %d at once: 201 after %.2f s (API CPU %.2f s), api peak RSS %.0f MB", format, len(keys), took.Seconds(), cpu.Seconds(), float64(rss)/1024)
				return nil
			}()
			cancel()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// psqlCopy times `psql -c '\copy ...'` of the CSV into a fresh table.
func (b *bench) psqlCopy(ctx context.Context, dbURL, path string) (time.Duration, error) {
	if _, err := exec.LookPath(b.opts.psql); err != nil {
		return 0, fmt.Errorf("%s not found", b.opts.psql)
	}
	create := exec.CommandContext(ctx, b.opts.psql, dbURL, "-q", "-v", "ON_ERROR_STOP=1", "-c",
		"CREATE TABLE bench_ingest_copy (ref text, company text, crm_owner text)")
	if out, err := create.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("psql: %v: %s", err, out)
	}
	abs, _ := filepath.Abs(path)
	cp := exec.CommandContext(ctx, b.opts.psql, dbURL, "-q", "-v", "ON_ERROR_STOP=1", "-c",
		fmt.Sprintf(`\copy bench_ingest_copy FROM '%s' WITH (FORMAT csv, HEADER true)`, abs))
	start := time.Now()
	out, err := cp.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("psql \\copy: %v: %s", err, out)
	}
	return took, nil
}
