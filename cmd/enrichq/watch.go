package main

import (
	"context"
	"encoding/json"
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

// The watch command (docs/watches.md): a finished job's inputs enriched
// again every period under a monthly cap, and what changed.

const watchUsage = `Usage: enrichq watch SUBCOMMAND [ARGUMENTS] [FLAGS]

Subcommands:
  create JOB --every 30d --cap N   watch a finished job's inputs; prints a month's estimate
  list                             the watches, newest first
  show WATCH                       a watch: its period, cap, next run and this month's credits
  run WATCH [--max-age 0s]         a run now (0s re-asks every row); prints its job
  changes WATCH                    what changed, oldest first
  pause WATCH, resume WATCH        stop and start its scheduled runs
  delete WATCH                     remove it (its runs' jobs stay)

"enrichq watch SUBCOMMAND -h" describes its flags.
`

type watchView struct {
	ID                string    `json:"id"`
	JobID             string    `json:"job_id"`
	Lookups           []string  `json:"lookups"`
	Every             string    `json:"every"`
	MonthlyCapCredits int64     `json:"monthly_cap_credits"`
	State             string    `json:"state"`
	Inputs            int       `json:"inputs"`
	NextRunAt         time.Time `json:"next_run_at"`
	Note              string    `json:"note"`
	Month             struct {
		Start      string `json:"start"`
		Spent      int64  `json:"spent"`
		Reserved   int64  `json:"reserved"`
		Remaining  int64  `json:"remaining"`
		CapReached bool   `json:"cap_reached"`
	} `json:"month"`
}

type watchRange struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

func runWatch(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(e.stdout, watchUsage)
		if len(args) == 0 {
			return usagef("watch: no subcommand given")
		}
		return nil
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "create":
		return watchCreate(ctx, e, rest)
	case "list":
		return watchList(ctx, e, rest)
	case "show":
		return watchShow(ctx, e, rest)
	case "run":
		return watchRun(ctx, e, rest)
	case "changes":
		return watchChanges(ctx, e, rest)
	case "pause", "resume":
		return watchSetState(ctx, e, sub, rest)
	case "delete":
		return watchDelete(ctx, e, rest)
	}
	return usagef("watch: unknown subcommand %q (enrichq watch -h lists them)", sub)
}

// watchArg checks a WATCH argument: a watch id.
func watchArg(s string) (string, error) {
	if _, err := uuid.Parse(s); err != nil {
		return "", usagef("%q is not a watch id (a UUID, as watch create and watch list print)", s)
	}
	return s, nil
}

func watchPath(id string, sub ...string) string {
	p := "/v1/watches/" + url.PathEscape(id)
	for _, s := range sub {
		p += "/" + s
	}
	return p
}

// watchOne parses the flags of a subcommand of one WATCH and returns it
// with a client.
func watchOne(e *env, f *flags, args []string) (string, *client, error) {
	pos, err := f.parse(args, 1)
	if err != nil {
		return "", nil, err
	}
	id, err := watchArg(pos[0])
	if err != nil {
		return "", nil, err
	}
	c, err := e.client()
	return id, c, err
}

func watchCreate(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "watch create", "watch create JOB --every 30d --cap N [--lookups profile,email] [--callback URL] [--json]")
	every := f.String("every", "30d", "how often the inputs are enriched again (at least 7d)")
	capCredits := f.Int64("cap", -1, "the monthly cap in credits (required)")
	lookups := f.String("lookups", "", "profile, email, phone, verify, comma-separated (default: the job's)")
	callback := f.String("callback", "", "where person.changed webhooks go")
	asJSON := f.Bool("json", false, "print the API's answer")
	pos, err := f.parse(args, 1)
	if err != nil {
		return helpOK(err)
	}
	job, err := jobArg(pos[0])
	if err != nil {
		return err
	}
	if *capCredits < 0 {
		return usagef("watch create: --cap N is required (credits a month, >= 0)")
	}
	body := map[string]any{"job_id": job, "every": *every, "monthly_cap_credits": *capCredits}
	if *lookups != "" {
		body["lookups"] = strings.Split(*lookups, ",")
	}
	if *callback != "" {
		body["callback_url"] = *callback
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	var out struct {
		Watch    watchView `json:"watch"`
		Estimate struct {
			Rows          int        `json:"rows"`
			RunsPerMonth  float64    `json:"runs_per_month"`
			CreditsPerRun watchRange `json:"credits_per_run"`
			Month         watchRange `json:"month"`
			CappedBy      bool       `json:"capped_by_cap"`
		} `json:"estimate"`
	}
	var raw json.RawMessage
	if err := c.postJSON(ctx, "/v1/watches", body, &raw); err != nil {
		return err
	}
	if *asJSON {
		_, err := fmt.Fprintf(e.stdout, "%s\n", raw)
		return err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return err
	}
	est := out.Estimate
	fmt.Fprintf(e.stdout, "watch %s: %d inputs of job %s every %s, cap %d credits a month\n",
		out.Watch.ID, out.Watch.Inputs, out.Watch.JobID, out.Watch.Every, out.Watch.MonthlyCapCredits)
	fmt.Fprintf(e.stdout, "estimate: %d-%d credits a run, %.2f runs a month: %d-%d credits a month",
		est.CreditsPerRun.Min, est.CreditsPerRun.Max, est.RunsPerMonth, est.Month.Min, est.Month.Max)
	if est.CappedBy {
		fmt.Fprint(e.stdout, " (held by the cap)")
	}
	fmt.Fprintf(e.stdout, "\nfirst run at %s\n", out.Watch.NextRunAt.UTC().Format(time.RFC3339))
	return nil
}

func watchList(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "watch list", "watch list [--json]")
	asJSON := f.Bool("json", false, "print the API's page")
	if _, err := f.parse(args, 0); err != nil {
		return helpOK(err)
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	var page struct {
		Watches []watchView `json:"watches"`
	}
	var raw json.RawMessage
	if err := c.getJSON(ctx, "/v1/watches", url.Values{"limit": {"200"}}, &raw); err != nil {
		return err
	}
	if *asJSON {
		_, err := fmt.Fprintf(e.stdout, "%s\n", raw)
		return err
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WATCH\tSTATE\tINPUTS\tEVERY\tCAP\tSPENT\tNEXT RUN")
	for _, w := range page.Watches {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%d\t%s\n", w.ID, w.State, w.Inputs, w.Every, w.MonthlyCapCredits, w.Month.Spent,
			w.NextRunAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

func watchShow(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "watch show", "watch show WATCH [--json]")
	asJSON := f.Bool("json", false, "print the API's answer")
	id, c, err := watchOne(e, f, args)
	if err != nil {
		return helpOK(err)
	}
	var raw json.RawMessage
	if err := c.getJSON(ctx, watchPath(id), nil, &raw); err != nil {
		return err
	}
	return printWatch(e.stdout, raw, *asJSON)
}

func printWatch(w io.Writer, raw json.RawMessage, asJSON bool) error {
	if asJSON {
		_, err := fmt.Fprintf(w, "%s\n", raw)
		return err
	}
	var v watchView
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "watch\t%s\n", v.ID)
	fmt.Fprintf(tw, "state\t%s\n", v.State)
	fmt.Fprintf(tw, "inputs\t%d of job %s (%s)\n", v.Inputs, v.JobID, strings.Join(v.Lookups, ", "))
	fmt.Fprintf(tw, "every\t%s, next run at %s\n", v.Every, v.NextRunAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(tw, "month\tfrom %s: %d spent, %d reserved, %d left of the cap of %d\n", v.Month.Start, v.Month.Spent, v.Month.Reserved,
		v.Month.Remaining, v.MonthlyCapCredits)
	if v.Note != "" {
		fmt.Fprintf(tw, "note\t%s\n", v.Note)
	}
	return tw.Flush()
}

func watchRun(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "watch run", "watch run WATCH [--max-age 0s] [--json]")
	maxAge := f.String("max-age", "", "how old a kept answer may be (0s re-asks every row; default the watch's period)")
	asJSON := f.Bool("json", false, "print the API's answer")
	id, c, err := watchOne(e, f, args)
	if err != nil {
		return helpOK(err)
	}
	var body any
	if *maxAge != "" {
		body = map[string]string{"max_age": *maxAge}
	}
	var raw json.RawMessage
	if err := c.postJSON(ctx, watchPath(id, "runs"), body, &raw); err != nil {
		return err
	}
	if *asJSON {
		_, err := fmt.Fprintf(e.stdout, "%s\n", raw)
		return err
	}
	var run struct {
		JobID  string `json:"job_id"`
		Rows   int    `json:"rows"`
		Budget int64  `json:"budget_credits"`
	}
	if err := json.Unmarshal(raw, &run); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s\n", run.JobID)
	fmt.Fprintf(e.stderr, "run of %d inputs, budget %d credits (what is left of the month's cap); follow it with: enrichq status %s\n",
		run.Rows, run.Budget, run.JobID)
	return nil
}

func watchChanges(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "watch changes", "watch changes WATCH [--json]")
	asJSON := f.Bool("json", false, "one JSON object a line instead of a table")
	id, c, err := watchOne(e, f, args)
	if err != nil {
		return helpOK(err)
	}
	type change struct {
		Ref    string    `json:"ref"`
		Field  string    `json:"field"`
		Old    *string   `json:"old"`
		New    *string   `json:"new"`
		Kind   string    `json:"kind"`
		Vendor string    `json:"vendor"`
		At     time.Time `json:"at"`
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	if !*asJSON {
		fmt.Fprintln(tw, "AT\tREF\tFIELD\tKIND\tOLD\tNEW")
	}
	cursor, n := "", 0
	for {
		q := url.Values{"limit": {"1000"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Changes    []json.RawMessage `json:"changes"`
			NextCursor *string           `json:"next_cursor"`
		}
		if err := c.getJSON(ctx, watchPath(id, "changes"), q, &page); err != nil {
			return err
		}
		for _, raw := range page.Changes {
			n++
			if *asJSON {
				fmt.Fprintf(e.stdout, "%s\n", raw)
				continue
			}
			var ch change
			if err := json.Unmarshal(raw, &ch); err != nil {
				return err
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ch.At.UTC().Format(time.RFC3339), ch.Ref, ch.Field, ch.Kind, orDash(ch.Old), orDash(ch.New))
		}
		if page.NextCursor == nil || len(page.Changes) == 0 {
			break
		}
		cursor = *page.NextCursor
	}
	if !*asJSON {
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stderr, "%s changes\n", strconv.Itoa(n))
	return nil
}

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

// watchSetState pauses or resumes a watch.
func watchSetState(ctx context.Context, e *env, sub string, args []string) error {
	f := newFlags(e, "watch "+sub, "watch "+sub+" WATCH [--json]")
	asJSON := f.Bool("json", false, "print the API's answer")
	id, c, err := watchOne(e, f, args)
	if err != nil {
		return helpOK(err)
	}
	state := map[string]string{"pause": "paused", "resume": "active"}[sub]
	resp, err := c.do(ctx, http.MethodPatch, watchPath(id), nil, strings.NewReader(`{"state": "`+state+`"}`),
		http.Header{"Content-Type": {"application/json"}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return printWatch(e.stdout, raw, *asJSON)
}

func watchDelete(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "watch delete", "watch delete WATCH")
	id, c, err := watchOne(e, f, args)
	if err != nil {
		return helpOK(err)
	}
	resp, err := c.do(ctx, http.MethodDelete, watchPath(id), nil, nil, nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	fmt.Fprintf(e.stderr, "watch %s deleted\n", id)
	return nil
}
