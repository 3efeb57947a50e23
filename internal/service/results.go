package service

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// Result paging.
const (
	DefaultResultsLimit = 1000  // a page without a limit
	MaxResultsLimit     = 10000 // any limit
	// MaxResultsPageBytes bounds the data of a page, about: a page of wide
	// rows (extras of 256 columns) ends sooner, its next_cursor saying where
	// the rest starts.
	MaxResultsPageBytes = 8 << 20
)

// ResultLine is one line of a job's results: the input, the state and what
// was found. Input fields are strings ("" when not given); found fields are
// null when the stage found nothing or did not run. The input email is
// input_email: email is the one found (api.md).
type ResultLine struct {
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

	Found
	NoMatch []domain.Stage `json:"no_match"`
}

// Found is what the vendor found for a row, as a result line and a feed line
// show it: null where nothing was found.
type Found struct {
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
	// EmailStatus is the verify stage's verdict on Email (valid, invalid,
	// accept_all, webmail, disposable, unknown); null when not verified.
	EmailStatus *string `json:"email_status"`

	Phones json.RawMessage `json:"phones"`
}

// setProfile shows a found profile.
func (f *Found) setProfile(p *store.ProfileResult) {
	f.FoundProfileURL = orNull(p.ProfileURL)
	f.FullName = orNull(p.Name)
	f.Headline = orNull(p.Headline)
	f.CurrentCompany = orNull(p.Company)
	f.CurrentRole = orNull(p.Role)
	f.Location = orNull(p.Location)
	f.CompanySize = orNull(p.CompanySize)
	f.Industry = orNull(p.Industry)
	f.Technographics = nonNil(p.Technographics)
}

// setEmail shows a found email.
func (f *Found) setEmail(e *store.EmailResult) {
	f.Email = orNull(e.Email)
	// Confidence is a real in Postgres: print it at float32 precision (0.9, not 0.899999976).
	c := json.Number(strconv.FormatFloat(e.Confidence, 'f', -1, 32))
	f.EmailConfidence = &c
	v := e.Verified
	f.EmailVerified = &v
	f.EmailStatus = orNull(e.Status)
}

// setPhones shows found phones (left null when the stored list is not JSON).
func (f *Found) setPhones(ph *store.PhoneResult) {
	if json.Valid(ph.Phones) {
		f.Phones = json.RawMessage(ph.Phones)
	}
}

// LineOf is the result line of a stored result.
func LineOf(r store.Result) ResultLine {
	l := ResultLine{
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
	if r.Profile != nil {
		l.setProfile(r.Profile)
	}
	if r.FoundEmail != nil {
		l.setEmail(r.FoundEmail)
	}
	if r.FoundPhones != nil {
		l.setPhones(r.FoundPhones)
	}
	return l
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Result is one row of a job's results, as stored.
type Result = store.Result

// ResultsQuery selects a page of a job's results.
type ResultsQuery struct {
	State  domain.RowState // "" for every state
	Cursor string          // "" from the first row; else a NextCursor this service gave
	Limit  int             // rows at most: 0 or less is DefaultResultsLimit; above MaxResultsLimit, MaxResultsLimit
}

// ResultsPage is a page of a job's results, in row order, and the cursor of
// the next page (nil on the last).
type ResultsPage struct {
	JobID      string
	Results    []store.Result
	NextCursor *string
}

// Results returns a page of the results of the tenant's job id (scope read).
func (s *Service) Results(ctx context.Context, p Principal, id string, q ResultsQuery) (_ ResultsPage, err error) {
	defer func() { err = notFound("job", err) }()
	if err := p.Require(domain.ScopeRead); err != nil {
		return ResultsPage{}, err
	}
	if err := checkRowState(q.State); err != nil {
		return ResultsPage{}, err
	}
	var afterID int64
	if q.Cursor != "" {
		var err error
		if afterID, err = decodeResultCursor(q.Cursor); err != nil {
			return ResultsPage{}, err
		}
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultResultsLimit
	}
	limit = min(limit, MaxResultsLimit)
	job, err := s.store.GetJob(ctx, p.Tenant, id)
	if err != nil {
		return ResultsPage{}, err
	}
	page, more, err := s.store.ListResultsWithin(ctx, job.ID, q.State, afterID, limit, MaxResultsPageBytes)
	if err != nil {
		return ResultsPage{}, err
	}
	out := ResultsPage{JobID: job.ID, Results: page}
	if more && len(page) > 0 {
		c := encodeResultCursor(page[len(page)-1].RowID)
		out.NextCursor = &c
	}
	if err := s.audit(ctx, p, store.AuditResultsDownload, job.ID, len(out.Results)); err != nil {
		return ResultsPage{}, err
	}
	return out, nil
}

// ResultExtraKeys lists, sorted, the extra input columns of the results of
// the tenant's job id in state ("" every state) (scope read): the columns a
// table of every result needs.
func (s *Service) ResultExtraKeys(ctx context.Context, p Principal, id string, state domain.RowState) (_ []string, err error) {
	defer func() { err = notFound("job", err) }()
	if err := p.Require(domain.ScopeRead); err != nil {
		return nil, err
	}
	if err := checkRowState(state); err != nil {
		return nil, err
	}
	job, err := s.store.GetJob(ctx, p.Tenant, id)
	if err != nil {
		return nil, err
	}
	return s.store.ResultExtraKeys(ctx, job.ID, state)
}

// checkRowState is nil for "" (every state) and a row state.
func checkRowState(state domain.RowState) error {
	if state == "" || state.Valid() {
		return nil
	}
	names := make([]string, len(domain.RowStates))
	for i, st := range domain.RowStates {
		names[i] = string(st)
	}
	return invalidParam("state", "state %q is not one of %s", clip(string(state)), strings.Join(names, ", "))
}

// A result cursor is the base64url of "r" and the last row id of a page.
func encodeResultCursor(rowID int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("r" + strconv.FormatInt(rowID, 10)))
}

func decodeResultCursor(c string) (int64, error) {
	bad := invalidParam("cursor", "cursor is not a cursor this API returned")
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
