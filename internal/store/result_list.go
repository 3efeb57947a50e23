package store

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// Result is one line of a job's results: the input, the state and what was found.
type Result struct {
	RowID       int64
	InputRow    int
	Ref         string
	Kind        domain.InputKind
	ProfileURL  string // input
	Name        string // input
	Company     string // input
	Domain      string // input
	Email       string // input
	Role        string
	Extra       map[string]string
	State       domain.RowState
	StateReason string
	LastError   string
	Attempts    int

	Profile     *ProfileResult
	FoundEmail  *EmailResult
	FoundPhones *PhoneResult
	NoMatches   []domain.Stage
}

// ListResults returns up to limit results of a job in row order, after row
// id afterID, optionally only rows in state.
func (s *Store) ListResults(ctx context.Context, jobID string, state domain.RowState, afterID int64, limit int) ([]Result, error) {
	out, _, err := s.ListResultsWithin(ctx, jobID, state, afterID, limit, 0)
	return out, err
}

// ListResultsWithin is ListResults that also stops once the rows read hold
// maxBytes of data (0: no bound; at least one row is read): a page of wide
// rows (extras, phones) stays bounded in memory. more says whether rows
// follow the last one returned.
func (s *Store) ListResultsWithin(ctx context.Context, jobID string, state domain.RowState, afterID int64, limit int, maxBytes int64) (out []Result, more bool, err error) {
	rows, err := s.pool.Query(ctx, listResultsSQL, jobID, afterID, state, limit+1)
	if err != nil {
		return nil, false, interpretError(err)
	}
	var size int64
	var sc resultScan
	_, err = pgx.ForEachRow(rows, sc.dest(), func() error {
		if len(out) == limit || (maxBytes > 0 && size >= maxBytes) {
			more = true
			return errPageFull
		}
		size += sc.bytes()
		r, err := sc.result()
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if errors.Is(err, errPageFull) {
		err = nil
	}
	return out, more, interpretError(err)
}

// listResultsSQL reads a page of a job's results: rows of job $1 after row
// id $2, of state $3 (” any), up to $4, with their extras, what was found
// and the stages that found nothing.
const listResultsSQL = `
		SELECT r.id, r.input_row, r.ref, r.input_kind, coalesce(r.profile_url, ''), coalesce(r.name, ''), coalesce(r.company, ''),
			coalesce(r.domain, ''), coalesce(r.email, ''), coalesce(r.role, ''), coalesce(x.extra::text, ''), r.state, r.state_reason, r.last_error, r.attempts,
			p.profile_url, coalesce(p.name, ''), coalesce(p.headline, ''), coalesce(p.company, ''), coalesce(p.role, ''),
			coalesce(p.location, ''), coalesce(p.company_size, ''), coalesce(p.industry, ''), p.technographics,
			e.email, coalesce(e.confidence, 0), coalesce(e.verified, false),
			ph.phones::text, coalesce(ph.primary_number, ''), coalesce(ph.primary_type, ''),
			ARRAY(SELECT stage FROM no_matches n WHERE n.row_id = r.id ORDER BY stage)
		FROM job_rows r
		LEFT JOIN job_input_extras x ON x.job_id = r.job_id AND x.input_row = r.input_row
		LEFT JOIN profile_results p ON p.row_id = r.id
		LEFT JOIN email_results e ON e.row_id = r.id
		LEFT JOIN phone_results ph ON ph.row_id = r.id
		WHERE r.job_id = $1 AND r.id > $2 AND ($3 = '' OR r.state = $3)
		ORDER BY r.id
		LIMIT $4`

// resultScan is where a row of listResultsSQL scans to.
type resultScan struct {
	res                              Result
	extra                            string
	pURL, eAddr, phones              *string
	pName, pHead, pComp, pRole, pLoc string
	pSize, pInd, phNum, phType       string
	tech                             []string
	conf                             float64
	verified                         bool
}

func (sc *resultScan) dest() []any {
	res := &sc.res
	return []any{&res.RowID, &res.InputRow, &res.Ref, &res.Kind, &res.ProfileURL, &res.Name, &res.Company,
		&res.Domain, &res.Email, &res.Role, &sc.extra, &res.State, &res.StateReason, &res.LastError, &res.Attempts,
		&sc.pURL, &sc.pName, &sc.pHead, &sc.pComp, &sc.pRole, &sc.pLoc, &sc.pSize, &sc.pInd, &sc.tech,
		&sc.eAddr, &sc.conf, &sc.verified, &sc.phones, &sc.phNum, &sc.phType, &res.NoMatches}
}

// bytes is about what the row scanned holds (see rowBytes).
func (sc *resultScan) bytes() int64 {
	n := rowBytes + int64(len(sc.extra))
	if sc.phones != nil {
		n += int64(len(*sc.phones))
	}
	return n
}

// result is the row scanned as a Result; the scan is made ready for the next row.
func (sc *resultScan) result() (Result, error) {
	r := sc.res
	if sc.extra != "" {
		if err := json.Unmarshal([]byte(sc.extra), &r.Extra); err != nil {
			return Result{}, err
		}
	}
	if sc.pURL != nil {
		r.Profile = &ProfileResult{ProfileURL: *sc.pURL, Name: sc.pName, Headline: sc.pHead, Company: sc.pComp, Role: sc.pRole,
			Location: sc.pLoc, CompanySize: sc.pSize, Industry: sc.pInd, Technographics: sc.tech}
	}
	if sc.eAddr != nil {
		r.FoundEmail = &EmailResult{Email: *sc.eAddr, Confidence: sc.conf, Verified: sc.verified}
	}
	if sc.phones != nil {
		r.FoundPhones = &PhoneResult{Phones: []byte(*sc.phones), PrimaryNumber: sc.phNum, PrimaryType: sc.phType}
	}
	sc.res = Result{}
	sc.tech = nil
	return r, nil
}

// rowBytes is what a result row holds besides its extras and phones, about:
// its inputs and the profile found.
const rowBytes = 512

// errPageFull stops reading the rows of a page.
var errPageFull = errors.New("store: page full")

// MaxResultExtraKeys caps ResultExtraKeys: ingest caps a job's distinct
// extra keys at as many (a CSV export's columns).
const MaxResultExtraKeys = 256

// ResultExtraKeys returns the keys of the extra columns of a job's rows,
// sorted, optionally only of rows in state; at most MaxResultExtraKeys.
func (s *Store) ResultExtraKeys(ctx context.Context, jobID string, state domain.RowState) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT k FROM job_input_extras x, jsonb_object_keys(x.extra) AS k
		WHERE x.job_id = $1
		  AND ($2 = '' OR EXISTS (SELECT 1 FROM job_rows r WHERE r.job_id = x.job_id AND r.input_row = x.input_row AND r.state = $2))
		ORDER BY k LIMIT $3`, jobID, state, MaxResultExtraKeys)
	if err != nil {
		return nil, interpretError(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return keys, interpretError(err)
}
