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
	err = s.inPageTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, more, err = readResultsPage(ctx, tx, jobID, state, afterID, limit, maxBytes)
		return err
	})
	return out, more, err
}

// readResultsPage reads a page of listResultsSQL in tx (see ListResultsWithin).
func readResultsPage(ctx context.Context, tx pgx.Tx, jobID string, state domain.RowState, afterID int64, limit int, maxBytes int64) (out []Result, more bool, err error) {
	// The unnamed statement, planned for its values every time: a cached
	// generic plan, costed for any job and any row, may walk job_rows'
	// primary key from the cursor through every later job's rows.
	rows, err := tx.Query(ctx, listResultsSQL, pgx.QueryExecModeCacheDescribe, jobID, afterID, state, limit+1)
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

// resultsSelect reads a job's results in row order: rows of job $1 after
// row id $2, of state $3 ("" any), with their extras, what was found and
// the stages that found nothing. Each joined table is reached by its own
// row's keys in a LATERAL subquery that LIMIT keeps from being flattened
// into a join: its only plan is an index probe by (job_id, input_row) or
// row_id per row, whatever the statistics say. A plain join let the planner,
// thinking a fresh job had one row, read all of a job's extras for every
// row (quadratic) or merge-join a result table from its first entry. The
// row bound is a row comparison only job_rows_job_id can seek: a generic
// plan walked the primary key from $2, through every later job's rows.
//
// The markers' subquery says LIMIT 4 (a row has one marker a stage at
// most): without statistics it was costed at thousands of markers a row,
// a cost so large that the planner's 1 % fuzz saw no difference between
// seeking job_rows_job_id and walking job_rows_pkey from its first entry,
// and took the walk for its lower startup cost (a deep page at 3,000,000
// rows: 600,000 rows filtered, 208,000 buffers, 0.45-0.95 s; with the
// bound, 22,000 buffers and 34 ms).
const resultsSelect = `
		SELECT r.id, r.input_row, r.ref, r.input_kind, coalesce(r.profile_url, ''), coalesce(r.name, ''), coalesce(r.company, ''),
			coalesce(r.domain, ''), coalesce(r.email, ''), coalesce(r.role, ''), coalesce(x.extra::text, ''), r.state, r.state_reason, r.last_error, r.attempts,
			p.profile_url, coalesce(p.name, ''), coalesce(p.headline, ''), coalesce(p.company, ''), coalesce(p.role, ''),
			coalesce(p.location, ''), coalesce(p.company_size, ''), coalesce(p.industry, ''), p.technographics,
			e.email, coalesce(e.confidence, 0), coalesce(e.verified, false), coalesce(e.email_status, ''),
			ph.phones::text, coalesce(ph.primary_number, ''), coalesce(ph.primary_type, ''),
			ARRAY(SELECT stage FROM no_matches n WHERE n.row_id = r.id ORDER BY stage LIMIT 4)
		FROM job_rows r
		LEFT JOIN LATERAL (SELECT x.extra FROM job_input_extras x
			WHERE x.job_id = r.job_id AND x.input_row = r.input_row LIMIT 1) x ON true
		LEFT JOIN LATERAL (SELECT p.profile_url, p.name, p.headline, p.company, p.role, p.location, p.company_size, p.industry, p.technographics
			FROM profile_results p WHERE p.row_id = r.id LIMIT 1) p ON true
		LEFT JOIN LATERAL (SELECT e.email, e.confidence, e.verified, e.email_status FROM email_results e WHERE e.row_id = r.id LIMIT 1) e ON true
		LEFT JOIN LATERAL (SELECT ph.phones, ph.primary_number, ph.primary_type FROM phone_results ph WHERE ph.row_id = r.id LIMIT 1) ph ON true
		WHERE r.job_id = $1 AND (r.job_id, r.id) > ($1, $2) AND ($3 = '' OR r.state = $3)
		ORDER BY r.id`

// listResultsSQL reads a page of a job's results (resultsSelect), up to $4.
const listResultsSQL = resultsSelect + `
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
	status                           string
}

func (sc *resultScan) dest() []any {
	res := &sc.res
	return []any{&res.RowID, &res.InputRow, &res.Ref, &res.Kind, &res.ProfileURL, &res.Name, &res.Company,
		&res.Domain, &res.Email, &res.Role, &sc.extra, &res.State, &res.StateReason, &res.LastError, &res.Attempts,
		&sc.pURL, &sc.pName, &sc.pHead, &sc.pComp, &sc.pRole, &sc.pLoc, &sc.pSize, &sc.pInd, &sc.tech,
		&sc.eAddr, &sc.conf, &sc.verified, &sc.status, &sc.phones, &sc.phNum, &sc.phType, &res.NoMatches}
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
		r.FoundEmail = &EmailResult{Email: *sc.eAddr, Confidence: sc.conf, Verified: sc.verified, Status: sc.status}
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
	sql := resultExtraKeysSQL
	if state != "" {
		sql = resultExtraKeysOfStateSQL
	}
	rows, err := s.pool.Query(ctx, sql, jobID, state, MaxResultExtraKeys)
	if err != nil {
		return nil, interpretError(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return keys, interpretError(err)
}
