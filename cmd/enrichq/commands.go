package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
)

// jobArg checks a JOB argument: a job id.
func jobArg(s string) (string, error) {
	if _, err := uuid.Parse(s); err != nil {
		return "", usagef("%q is not a job id (a UUID, as submit and list print)", s)
	}
	return s, nil
}

func runStatus(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "status", "status JOB [--json]")
	asJSON := f.Bool("json", false, "print the API's status body")
	pos, err := f.parse(args, 1)
	if err != nil {
		return helpOK(err)
	}
	id, err := jobArg(pos[0])
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	var st jobStatus
	if err := c.getJSON(ctx, jobPath(id), nil, &st); err != nil {
		return err
	}
	if *asJSON {
		return printJob(e.stdout, st, true)
	}
	return writeStatus(e.stdout, st)
}

// writeStatus writes a status for people.
func writeStatus(w io.Writer, st jobStatus) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	name := ""
	if st.Name != "" {
		name = fmt.Sprintf(" %q", st.Name)
	}
	fmt.Fprintf(tw, "job\t%s%s\n", st.ID, name)
	state := st.State
	if st.StateReason != "" {
		state += ": " + oneLine(st.StateReason)
	}
	fmt.Fprintf(tw, "state\t%s\n", state)
	r := st.Rows
	fmt.Fprintf(tw, "rows\t%d of %d done (%.0f%%): %d matched, %d no_match, %d failed, %d skipped; %d pending, %d in flight, %d waiting to retry\n",
		st.done(), r.Total, 100*st.Progress, r.Matched, r.NoMatch, r.Failed, r.Skipped, r.Pending, r.InFlight, r.RetryWait)
	fmt.Fprintf(tw, "credits\t%d spent, %d reserved, %s\n", st.Credits.Spent, st.Credits.Reserved, st.budget())
	fmt.Fprintf(tw, "lookups\t%s\n", strings.Join(st.Lookups, ", "))
	if len(st.Roles) > 0 {
		fmt.Fprintf(tw, "roles\t%s\n", strings.Join(st.Roles, ", "))
	}
	times := "created " + st.CreatedAt.Local().Format(time.DateTime)
	if st.StartedAt != nil {
		times += ", started " + st.StartedAt.Local().Format(time.DateTime)
	}
	if st.FinishedAt != nil {
		times += ", finished " + st.FinishedAt.Local().Format(time.DateTime)
	} else if st.ETASeconds != nil {
		times += fmt.Sprintf(", about %s to go", time.Duration(*st.ETASeconds)*time.Second)
	}
	fmt.Fprintf(tw, "time\t%s\n", times)
	return tw.Flush()
}

func runList(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "list", "list [--limit N] [--json]")
	limit := f.Int("limit", 20, "how many jobs, newest first")
	asJSON := f.Bool("json", false, "print a JSON array of status bodies")
	if _, err := f.parse(args, 0); err != nil {
		return helpOK(err)
	}
	if *limit < 1 {
		return usagef("--limit must be at least 1")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	var jobs []jobStatus
	cursor := ""
	for len(jobs) < *limit {
		q := url.Values{"limit": {strconv.Itoa(min(*limit-len(jobs), 200))}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Jobs       []jobStatus `json:"jobs"`
			NextCursor *string     `json:"next_cursor"`
		}
		if err := c.getJSON(ctx, "/v1/jobs", q, &page); err != nil {
			return err
		}
		jobs = append(jobs, page.Jobs...)
		if page.NextCursor == nil || len(page.Jobs) == 0 {
			break
		}
		cursor = *page.NextCursor
	}
	if *asJSON {
		raws := make([]json.RawMessage, len(jobs))
		for i, j := range jobs {
			raws[i] = j.raw
		}
		b, err := json.Marshal(raws)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", b)
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tDONE\tROWS\tCREDITS\tCREATED\tNAME")
	for _, j := range jobs {
		credits := strconv.FormatInt(j.Credits.Spent, 10)
		if j.Credits.Budget != nil {
			credits += "/" + strconv.FormatInt(*j.Credits.Budget, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f%%\t%d\t%s\t%s\t%s\n", j.ID, j.State, 100*j.Progress, j.Rows.Total, credits,
			j.CreatedAt.Local().Format(time.DateTime), j.Name)
	}
	return tw.Flush()
}

func runResults(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "results", "results JOB [--format csv|ndjson|json] [--state matched|no_match|failed|skipped|...]")
	format := f.String("format", "csv", "csv, ndjson (one JSON object a line) or json (one array)")
	state := f.String("state", "", "only lines in this state: matched, no_match, failed, skipped, pending, in_flight, retry_wait")
	pos, err := f.parse(args, 1)
	if err != nil {
		return helpOK(err)
	}
	id, err := jobArg(pos[0])
	if err != nil {
		return err
	}
	switch *format {
	case "csv", "ndjson", "json":
	default:
		return usagef("--format %q is not csv, ndjson or json", *format)
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	q := url.Values{"format": {*format}}
	if *state != "" {
		q.Set("state", *state)
	}
	if *format == "json" {
		return jsonResults(ctx, c, e.stdout, id, q)
	}
	// csv and ndjson stream every line in one answer.
	resp, err := c.do(ctx, http.MethodGet, jobPath(id, "results"), q, nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	w := bufio.NewWriterSize(e.stdout, 64<<10)
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the results of job %s were cut off after %d bytes: %v", id, n, err)
	}
	return w.Flush()
}

// jsonResults writes every result line of a job as one JSON array, from
// one ndjson download: one pass over the job, however large.
func jsonResults(ctx context.Context, c *client, stdout io.Writer, id string, q url.Values) error {
	q.Set("format", "ndjson")
	resp, err := c.do(ctx, http.MethodGet, jobPath(id, "results"), q, nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	w := bufio.NewWriterSize(stdout, 64<<10)
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	first := true
	w.WriteString("[")
	for n := 0; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			if !first {
				w.WriteString(",")
			}
			first = false
			w.WriteString("\n")
			w.Write(line[:len(line)-1])
		}
		if errors.Is(err, io.EOF) && len(line) == 0 {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("the results of job %s were cut off after %d lines: %v", id, n, err)
		}
	}
	w.WriteString("\n]\n")
	return w.Flush()
}

func runCancel(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "cancel", "cancel JOB [--json]")
	asJSON := f.Bool("json", false, "print the job's status body after the cancel")
	pos, err := f.parse(args, 1)
	if err != nil {
		return helpOK(err)
	}
	id, err := jobArg(pos[0])
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	var st jobStatus
	if err := c.postJSON(ctx, jobPath(id, "cancel"), nil, &st); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusConflict {
			return fmt.Errorf("job %s cannot be canceled: %s", id, oneLine(ae.Message))
		}
		return err
	}
	fmt.Fprintf(e.stderr, "job %s %s: %d rows skipped, %d in flight finish, %d done before\n",
		st.ID, st.State, st.Rows.Skipped, st.Rows.InFlight, st.Rows.Matched+st.Rows.NoMatch+st.Rows.Failed)
	if *asJSON {
		return printJob(e.stdout, st, true)
	}
	return nil
}

func runFeed(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "feed", "feed [--since SEQ] [--max N]")
	since := f.Int64("since", 0, "the feed position to read after: the seq of the last line read before (0: from the start)")
	maxLines := f.Int("max", 0, "stop after this many lines (0: read to the end)")
	if _, err := f.parse(args, 0); err != nil {
		return helpOK(err)
	}
	if *since < 0 || *maxLines < 0 {
		return usagef("--since and --max must not be negative")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(e.stdout, 64<<10)
	n, next, err := c.readSince(ctx, "/v1/results", "results", *since, *maxLines, func(r json.RawMessage) error {
		w.Write(r)
		_, err := w.WriteString("\n")
		return err
	})
	if err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "%d lines; next: enrichq feed --since %d\n", n, next)
	return nil
}
