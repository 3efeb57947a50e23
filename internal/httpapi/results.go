package httpapi

import (
	"encoding/csv"
	"encoding/json"
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
	resultsPage         = 1000                        // rows per page when streaming ndjson or csv
	// pageWriteTimeout bounds the writing of one streamed page, so a client
	// that stops reading does not hold the stream forever.
	pageWriteTimeout = time.Minute
)

// resultLine is one line of a job's results (service.ResultLine).
type resultLine = service.ResultLine

var lineOf = service.LineOf

type resultsQuery struct {
	format string // json, ndjson, csv
	page   service.ResultsQuery
	stream bool // no limit: every remaining row (ndjson, csv)
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
	def := 0
	if rq.format == "json" {
		def = defaultResultsLimit
	}
	limit, err := limitParam(q, def, maxResultsLimit)
	if err != nil {
		return rq, err
	}
	rq.page.Limit, rq.stream = limit, limit == 0
	if rq.stream {
		rq.page.Limit = resultsPage
	}
	return rq, nil
}

// resultsPageJSON is the shape of a json page, as writeJSONPage writes it
// (and the OpenAPI document's ResultsPage).
type resultsPageJSON struct {
	Results    []resultLine `json:"results"`
	NextCursor *string      `json:"next_cursor"`
}

// jobResults is GET /v1/jobs/{id}/results. With a limit (always for json)
// it answers one page and says where the next starts (next_cursor, and the
// X-Next-Cursor header); ndjson and csv without a limit stream every
// remaining row, a page at a time.
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
			nd.write(lineOf(res))
		}
	case "csv":
		cw := newResultsCSV(w, page.JobID, extraKeys(page.Results))
		cw.write(page.Results)
		_ = cw.flush() // a write error means the client is gone
	}
}

// streamResults writes every result after the query's cursor, page by
// page. Once the answer has begun an error cannot change its status: it
// aborts the connection so the client sees a broken download, not a short
// one.
func (s *server) streamResults(w http.ResponseWriter, r *http.Request, rq resultsQuery) {
	ctx, p, id := r.Context(), principalFrom(r.Context()), r.PathValue("id")
	var keys []string
	if rq.format == "csv" {
		// The header must name every extra column of the rows to come.
		var err error
		if keys, err = s.svc.ResultExtraKeys(ctx, p, id, rq.page.State); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	page, err := s.svc.Results(ctx, p, id, rq.page)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	var (
		nd *ndjsonWriter
		cw *resultsCSV
	)
	if rq.format == "csv" {
		cw = newResultsCSV(w, page.JobID, keys)
	} else {
		nd = newNDJSONWriter(w)
	}
	rc := http.NewResponseController(w)
	for {
		_ = rc.SetWriteDeadline(time.Now().Add(pageWriteTimeout))
		var werr error
		if cw != nil {
			cw.write(page.Results)
			werr = cw.flush()
		} else {
			for _, res := range page.Results {
				nd.write(lineOf(res))
			}
			werr = nd.err
		}
		if werr != nil {
			// The client stopped reading or went away.
			panic(http.ErrAbortHandler)
		}
		if page.NextCursor == nil {
			return
		}
		_ = rc.Flush()
		rq.page.Cursor = *page.NextCursor
		if page, err = s.svc.Results(ctx, p, id, rq.page); err != nil {
			if ctx.Err() == nil {
				s.Log.ErrorContext(ctx, "streaming results failed", "job_id", id, "cursor", rq.page.Cursor, "err", err)
			}
			panic(http.ErrAbortHandler)
		}
	}
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

func (n *ndjsonWriter) write(l resultLine) {
	if n.err == nil {
		n.err = n.enc.Encode(l)
	}
}

// resultColumns are the fixed CSV columns, in order; extra columns follow,
// sorted by name. Columns added later go last, so no column moves.
var resultColumns = []string{
	"row", "ref", "profile_url", "name", "company", "input_email", "role", "state", "reason",
	"found_profile_url", "full_name", "headline", "current_company", "current_role", "location", "company_size", "industry",
	"technographics", "email", "email_confidence", "email_verified", "phones", "no_match", "domain",
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

func (c *resultsCSV) write(page []service.Result) {
	for _, res := range page {
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
			deref(l.Email), conf, verified, phoneNumbers(l.Phones), joinStages(l.NoMatch, ";"), l.Domain)
		for _, k := range c.extra {
			rec = append(rec, l.Extra[k])
		}
		c.rec = rec
		c.writeRecord(rec)
	}
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
	return c.w.Error()
}

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
