package httpapi

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
)

// Result paging.
const (
	defaultResultsLimit = service.DefaultResultsLimit // format=json without ?limit=
	maxResultsLimit     = service.MaxResultsLimit     // any ?limit=
	resultsPage         = service.DownloadBatch       // rows of a download between write deadlines
	// pageWriteTimeout bounds the writing of resultsPage rows of a
	// download, so a client that stops reading does not hold it forever.
	pageWriteTimeout = time.Minute
)

// resultLine is one line of a job's results (service.ResultLine).
type resultLine = service.ResultLine

var lineOf = service.LineOf

type resultsQuery struct {
	format string // json, ndjson, csv
	page   service.ResultsQuery
	stream bool // every remaining row: ndjson and csv without a limit, all=true
}

// parseResultsQuery reads the query of GET /v1/jobs/{id}/results; the
// service checks state and cursor.
func parseResultsQuery(r *http.Request) (resultsQuery, error) {
	q := r.URL.Query()
	rq := resultsQuery{format: q.Get("format"),
		page: service.ResultsQuery{State: domain.RowState(q.Get("state")), Cursor: q.Get("cursor")}}
	switch rq.format {
	case "":
		rq.format = "json"
	case "json", "ndjson", "csv":
	default:
		return rq, badParam("format", "format %q is not json, ndjson or csv", clip(rq.format))
	}
	switch all := q.Get("all"); all {
	case "", "false":
	case "true":
		if q.Get("limit") != "" {
			return rq, badParam("limit", "limit and all=true exclude each other: all=true answers every line")
		}
		rq.stream = true
		return rq, nil
	default:
		return rq, badParam("all", "all %q is not true or false", clip(all))
	}
	def := 0
	if rq.format == "json" {
		def = defaultResultsLimit
	}
	limit, err := limitParam(q, def, maxResultsLimit)
	if err != nil {
		return rq, err
	}
	rq.page.Limit, rq.stream = limit, limit == 0
	return rq, nil
}

// resultsPageJSON is the shape of a json page, as writeJSONPage writes it
// (and the OpenAPI document's ResultsPage).
type resultsPageJSON struct {
	Results    []resultLine `json:"results"`
	NextCursor *string      `json:"next_cursor"`
}

// jobResults is GET /v1/jobs/{id}/results. With a limit (always for json
// without all=true) it answers one page and says where the next starts
// (next_cursor, and the X-Next-Cursor header); ndjson and csv without a
// limit, and any format with all=true, stream every remaining row in one
// pass (streamResults).
func (s *server) jobResults(w http.ResponseWriter, r *http.Request) {
	rq, err := parseResultsQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if rq.stream {
		s.streamResults(w, r, rq)
		return
	}
	page, err := s.svc.Results(r.Context(), principalFrom(r.Context()), r.PathValue("id"), rq.page)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if page.NextCursor != nil {
		w.Header().Set("X-Next-Cursor", *page.NextCursor)
	}
	switch rq.format {
	case "json":
		_ = writeJSONPage(w, "results", len(page.Results), func(i int) any { return lineOf(page.Results[i]) },
			"next_cursor", page.NextCursor) // a write error means the client is gone
	case "ndjson":
		nd := newNDJSONWriter(w)
		for _, res := range page.Results {
			nd.write(res)
		}
	case "csv":
		cw := newResultsCSV(w, page.JobID, extraKeys(page.Results))
		cw.writePage(page.Results)
		_ = cw.flush() // a write error means the client is gone
	}
}

// streamResults writes every result after the query's cursor, as one
// download (service.DownloadResults): one pass over the job's rows, its
// write deadline pushed on every service.DownloadBatch rows. Once the
// answer has begun an error cannot change its status: it aborts the
// connection so the client sees a broken download, not a short one.
func (s *server) streamResults(w http.ResponseWriter, r *http.Request, rq resultsQuery) {
	ctx, p, id := r.Context(), principalFrom(r.Context()), r.PathValue("id")
	rc := http.NewResponseController(w)
	var (
		out     resultsStream
		written int
	)
	q := service.DownloadQuery{State: rq.page.State, Cursor: rq.page.Cursor, ExtraKeys: rq.format == "csv"}
	_, err := s.svc.DownloadResults(ctx, p, id, q, func(d service.Download) error {
		_ = rc.SetWriteDeadline(time.Now().Add(pageWriteTimeout))
		w.Header().Set("Cache-Control", "no-store")
		switch rq.format {
		case "csv":
			out = newResultsCSV(w, d.JobID, d.ExtraKeys)
		case "json":
			out = newJSONStream(w)
		default:
			out = newNDJSONWriter(w)
		}
		return nil
	}, func(res service.Result) error {
		if written%service.DownloadBatch == 0 && written > 0 {
			// A batch written: the client read it in time.
			if err := out.flush(); err != nil {
				return err
			}
			_ = rc.Flush()
			_ = rc.SetWriteDeadline(time.Now().Add(pageWriteTimeout))
		}
		written++
		out.write(res)
		return nil
	})
	if err == nil && out != nil {
		err = out.end()
	}
	switch {
	case err == nil:
	case out == nil:
		s.writeError(w, r, err) // nothing written yet
	default:
		if ctx.Err() == nil && !isWriteError(err) {
			s.Log.ErrorContext(ctx, "streaming results failed", "job_id", id, "rows", written, "err", err)
		}
		panic(http.ErrAbortHandler)
	}
}

// resultsStream writes the lines of a download in one format.
type resultsStream interface {
	write(service.Result)
	// flush writes out what is buffered and returns the first write error.
	flush() error
	// end writes what closes the answer and flushes it.
	end() error
}

// isWriteError is whether err came of writing to the client (it went
// away or stopped reading), not of reading the rows.
func isWriteError(err error) bool {
	var w *clientWriteError
	return errors.As(err, &w)
}

// clientWriteError wraps an error of writing to the client.
type clientWriteError struct{ err error }

func (e *clientWriteError) Error() string { return "write to client: " + e.err.Error() }
func (e *clientWriteError) Unwrap() error { return e.err }

// jsonStream writes a download as one ResultsPage: every line, and a
// null next_cursor.
type jsonStream struct {
	bw    *bufio.Writer
	enc   *json.Encoder
	n     int
	err   error
	wrote bool
}

func newJSONStream(w http.ResponseWriter) *jsonStream {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	bw.WriteString(`{"results":[`)
	return &jsonStream{bw: bw, enc: enc}
}

func (j *jsonStream) write(res service.Result) {
	if j.err != nil {
		return
	}
	if j.n > 0 {
		j.bw.WriteByte(',')
	}
	j.n++
	j.err = j.enc.Encode(lineOf(res))
}

func (j *jsonStream) flush() error {
	if j.err == nil {
		j.err = j.bw.Flush()
	}
	if j.err != nil {
		return &clientWriteError{j.err}
	}
	return nil
}

func (j *jsonStream) end() error {
	if j.err == nil {
		j.bw.WriteString("],\"next_cursor\":null}\n")
	}
	return j.flush()
}

type ndjsonWriter struct {
	enc *json.Encoder
	err error // the first write error
}

func newNDJSONWriter(w http.ResponseWriter) *ndjsonWriter {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &ndjsonWriter{enc: enc}
}

func (n *ndjsonWriter) write(res service.Result) {
	if n.err == nil {
		n.err = n.enc.Encode(lineOf(res))
	}
}

func (n *ndjsonWriter) flush() error {
	if n.err != nil {
		return &clientWriteError{n.err}
	}
	return nil
}

func (n *ndjsonWriter) end() error { return n.flush() }

// resultColumns are the fixed CSV columns, in order; extra columns follow,
// sorted by name. Columns added later go last, so no column moves.
var resultColumns = []string{
	"row", "ref", "profile_url", "name", "company", "input_email", "role", "state", "reason",
	"found_profile_url", "full_name", "headline", "current_company", "current_role", "location", "company_size", "industry",
	"technographics", "email", "email_confidence", "email_verified", "phones", "no_match", "domain",
	"email_status",
}

type resultsCSV struct {
	w     *csv.Writer
	extra []string
	rec   []string
}

func newResultsCSV(w http.ResponseWriter, jobID string, extra []string) *resultsCSV {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="job-`+jobID+`-results.csv"`)
	w.WriteHeader(http.StatusOK)
	c := &resultsCSV{w: csv.NewWriter(w), extra: extra}
	header := slices.Clone(resultColumns)
	for _, k := range extra {
		if slices.Contains(resultColumns, k) {
			k = "extra." + k // never two columns of the same name
		}
		header = append(header, k)
	}
	c.writeRecord(header)
	return c
}

func (c *resultsCSV) writePage(page []service.Result) {
	for _, res := range page {
		c.write(res)
	}
}

func (c *resultsCSV) write(res service.Result) {
	l := lineOf(res)
	var conf, verified string
	if l.EmailConfidence != nil {
		conf = l.EmailConfidence.String()
	}
	if l.EmailVerified != nil {
		verified = strconv.FormatBool(*l.EmailVerified)
	}
	rec := append(c.rec[:0],
		strconv.Itoa(l.Row), l.Ref, l.ProfileURL, l.Name, l.Company, l.InputEmail, l.Role, string(l.State), l.Reason,
		deref(l.FoundProfileURL), deref(l.FullName), deref(l.Headline), deref(l.CurrentCompany), deref(l.CurrentRole),
		deref(l.Location), deref(l.CompanySize), deref(l.Industry), strings.Join(l.Technographics, ";"),
		deref(l.Email), conf, verified, phoneNumbers(l.Phones), joinStages(l.NoMatch, ";"), l.Domain, deref(l.EmailStatus))
	for _, k := range c.extra {
		rec = append(rec, l.Extra[k])
	}
	c.rec = rec
	c.writeRecord(rec)
}

// writeRecord writes one CSV record with every cell defused.
func (c *resultsCSV) writeRecord(rec []string) {
	for i, v := range rec {
		rec[i] = defuseFormula(v)
	}
	_ = c.w.Write(rec) // a write error means the client is gone
}

// flush writes out what is buffered and returns the first write error.
func (c *resultsCSV) flush() error {
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return &clientWriteError{err}
	}
	return nil
}

func (c *resultsCSV) end() error { return c.flush() }

// phoneNumbers joins the numbers of a phones JSON array with ";".
func phoneNumbers(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var phones []struct {
		Number string `json:"number"`
	}
	if err := json.Unmarshal(raw, &phones); err != nil {
		return ""
	}
	nums := make([]string, 0, len(phones))
	for _, p := range phones {
		if p.Number != "" {
			nums = append(nums, p.Number)
		}
	}
	return strings.Join(nums, ";")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// extraKeys gathers the extra keys of a page, sorted.
func extraKeys(page []service.Result) []string {
	seen := map[string]bool{}
	var keys []string
	for _, r := range page {
		for k := range r.Extra {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

func joinStages(stages []domain.Stage, sep string) string {
	var b strings.Builder
	for i, s := range stages {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(string(s))
	}
	return b.String()
}
