package httpapi

import (
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// Result paging.
const (
	defaultResultsLimit = 1000  // format=json without ?limit=
	maxResultsLimit     = 10000 // any ?limit=
	resultsPage         = 1000  // rows per query when streaming ndjson or csv
	// pageWriteTimeout bounds the writing of one streamed page, so a client
	// that stops reading does not hold the stream forever.
	pageWriteTimeout = time.Minute
)

// resultLine is one line of a job's results: the input, the state and what
// was found. Input fields are strings ("" when not given); found fields are
// null when the stage found nothing or did not run. The input email is
// input_email: email is the one found (api.md).
type resultLine struct {
	Row        int               `json:"row"`
	Ref        string            `json:"ref"`
	ProfileURL string            `json:"profile_url"`
	Name       string            `json:"name"`
	Company    string            `json:"company"`
	Domain     string            `json:"domain"`
	InputEmail string            `json:"input_email"`
	Role       string            `json:"role"`
	Extra      map[string]string `json:"extra"`
	State      domain.RowState   `json:"state"`
	Reason     string            `json:"reason"`

	FoundProfileURL *string  `json:"found_profile_url"`
	FullName        *string  `json:"full_name"`
	Headline        *string  `json:"headline"`
	CurrentCompany  *string  `json:"current_company"`
	CurrentRole     *string  `json:"current_role"`
	Location        *string  `json:"location"`
	CompanySize     *string  `json:"company_size"`
	Industry        *string  `json:"industry"`
	Technographics  []string `json:"technographics"`

	Email           *string      `json:"email"`
	EmailConfidence *json.Number `json:"email_confidence"`
	EmailVerified   *bool        `json:"email_verified"`

	Phones  json.RawMessage `json:"phones"`
	NoMatch []domain.Stage  `json:"no_match"`
}

func lineOf(r store.Result) resultLine {
	l := resultLine{
		Row: r.InputRow, Ref: r.Ref, ProfileURL: r.ProfileURL, Name: r.Name, Company: r.Company, Domain: r.Domain, InputEmail: r.Email,
		Role: r.Role, Extra: r.Extra, State: r.State, Reason: r.StateReason, NoMatch: nonNil(r.NoMatches),
	}
	if l.Extra == nil {
		l.Extra = map[string]string{}
	}
	if r.State == domain.RowFailed && r.LastError != "" && r.LastError != r.StateReason {
		if l.Reason == "" {
			l.Reason = r.LastError
		} else {
			l.Reason += ": " + r.LastError
		}
	}
	if p := r.Profile; p != nil {
		l.FoundProfileURL = orNull(p.ProfileURL)
		l.FullName = orNull(p.Name)
		l.Headline = orNull(p.Headline)
		l.CurrentCompany = orNull(p.Company)
		l.CurrentRole = orNull(p.Role)
		l.Location = orNull(p.Location)
		l.CompanySize = orNull(p.CompanySize)
		l.Industry = orNull(p.Industry)
		l.Technographics = nonNil(p.Technographics)
	}
	if e := r.FoundEmail; e != nil {
		l.Email = orNull(e.Email)
		// Confidence is a real in Postgres: print it at float32 precision (0.9, not 0.899999976).
		c := json.Number(strconv.FormatFloat(e.Confidence, 'f', -1, 32))
		l.EmailConfidence = &c
		v := e.Verified
		l.EmailVerified = &v
	}
	if ph := r.FoundPhones; ph != nil && json.Valid(ph.Phones) {
		l.Phones = json.RawMessage(ph.Phones)
	}
	return l
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type resultsQuery struct {
	format  string          // json, ndjson, csv
	state   domain.RowState // "" for all
	afterID int64
	limit   int // 0: stream everything (ndjson, csv)
}

func parseResultsQuery(r *http.Request) (resultsQuery, error) {
	q := r.URL.Query()
	rq := resultsQuery{format: q.Get("format"), state: domain.RowState(q.Get("state"))}
	switch rq.format {
	case "":
		rq.format = "json"
	case "json", "ndjson", "csv":
	default:
		return rq, badParam("format", "format %q is not json, ndjson or csv", clip(rq.format))
	}
	if rq.state != "" && !rq.state.Valid() {
		names := make([]string, len(domain.RowStates))
		for i, st := range domain.RowStates {
			names[i] = string(st)
		}
		return rq, badParam("state", "state %q is not one of %s", clip(string(rq.state)), strings.Join(names, ", "))
	}
	if c := q.Get("cursor"); c != "" {
		id, err := decodeResultCursor(c)
		if err != nil {
			return rq, err
		}
		rq.afterID = id
	}
	def := 0
	if rq.format == "json" {
		def = defaultResultsLimit
	}
	limit, err := limitParam(q, def, maxResultsLimit)
	if err != nil {
		return rq, err
	}
	rq.limit = limit
	return rq, nil
}

// A result cursor is the base64url of "r" and the last row id of a page.
func encodeResultCursor(rowID int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("r" + strconv.FormatInt(rowID, 10)))
}

func decodeResultCursor(c string) (int64, error) {
	bad := badParam("cursor", "cursor is not a cursor this API returned")
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, bad
	}
	s, ok := strings.CutPrefix(string(b), "r")
	if !ok {
		return 0, bad
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 0 {
		return 0, bad
	}
	return id, nil
}

type resultsPageJSON struct {
	Results    []resultLine `json:"results"`
	NextCursor *string      `json:"next_cursor"`
}

// jobResults is GET /v1/jobs/{id}/results. With a limit (always for json)
// it answers one page and says where the next starts (next_cursor, and the
// X-Next-Cursor header); ndjson and csv without a limit stream every
// remaining row, a page at a time.
func (s *server) jobResults(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	rq, err := parseResultsQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	job, err := s.Store.GetJob(ctx, tenantFrom(ctx), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if rq.limit == 0 {
		s.streamResults(w, r, job, rq)
		return
	}
	page, err := s.Store.ListResults(ctx, job.ID, rq.state, rq.afterID, rq.limit+1)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var next *string
	if len(page) > rq.limit {
		page = page[:rq.limit]
		c := encodeResultCursor(page[len(page)-1].RowID)
		next = &c
		w.Header().Set("X-Next-Cursor", c)
	}
	switch rq.format {
	case "json":
		out := resultsPageJSON{Results: make([]resultLine, 0, len(page)), NextCursor: next}
		for _, res := range page {
			out.Results = append(out.Results, lineOf(res))
		}
		writeJSON(w, http.StatusOK, out)
	case "ndjson":
		nd := newNDJSONWriter(w)
		for _, res := range page {
			nd.write(lineOf(res))
		}
	case "csv":
		cw := newResultsCSV(w, job.ID, extraKeys(page))
		cw.write(page)
		_ = cw.flush() // a write error means the client is gone
	}
}

// streamResults writes every result after rq.afterID, page by page. Once
// the answer has begun an error cannot change its status: it aborts the
// connection so the client sees a broken download, not a short one.
func (s *server) streamResults(w http.ResponseWriter, r *http.Request, job store.Job, rq resultsQuery) {
	ctx := r.Context()
	var keys []string
	if rq.format == "csv" {
		// The header must name every extra column of the rows to come.
		var err error
		if keys, err = s.Store.ResultExtraKeys(ctx, job.ID, rq.state); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	page, err := s.Store.ListResults(ctx, job.ID, rq.state, rq.afterID, resultsPage)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var (
		nd *ndjsonWriter
		cw *resultsCSV
	)
	if rq.format == "csv" {
		cw = newResultsCSV(w, job.ID, keys)
	} else {
		nd = newNDJSONWriter(w)
	}
	rc := http.NewResponseController(w)
	for {
		_ = rc.SetWriteDeadline(time.Now().Add(pageWriteTimeout))
		var werr error
		if cw != nil {
			cw.write(page)
			werr = cw.flush()
		} else {
			for _, res := range page {
				nd.write(lineOf(res))
			}
			werr = nd.err
		}
		if werr != nil {
			// The client stopped reading or went away.
			panic(http.ErrAbortHandler)
		}
		if len(page) < resultsPage {
			return
		}
		_ = rc.Flush()
		after := page[len(page)-1].RowID
		if page, err = s.Store.ListResults(ctx, job.ID, rq.state, after, resultsPage); err != nil {
			if ctx.Err() == nil {
				s.Log.ErrorContext(ctx, "streaming results failed", "job_id", job.ID, "after", after, "err", err)
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

func (c *resultsCSV) write(page []store.Result) {
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

// defuseFormula neutralises a cell a spreadsheet would run as a formula
// (CSV injection): one starting with =, +, -, @, tab or CR gets a leading '.
func defuseFormula(v string) string {
	if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
		return "'" + v
	}
	return v
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
func extraKeys(page []store.Result) []string {
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
