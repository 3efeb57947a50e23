package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Row is one lookup of a job, as a worker sees it.
type Row struct {
	ID              int64
	JobID           string
	Chunk           int
	InputRow        int
	Ref             string
	Kind            domain.InputKind
	ProfileURL      string
	Name            string
	Company         string
	Domain          string
	Email           string
	Role            string
	State           domain.RowState
	Attempts        int
	FoundProfileURL string
	StagesDone      []domain.Stage
	AnyMatch        bool
}

// Done reports whether the row already has an outcome for stage.
func (r Row) Done(stage domain.Stage) bool {
	for _, s := range r.StagesDone {
		if s == stage {
			return true
		}
	}
	return false
}

// Claim is a set of rows a worker holds under a lease.
type Claim struct {
	Token string
	Rows  []Row
}

// IDs returns the claimed row ids.
func (c Claim) IDs() []int64 {
	ids := make([]int64, len(c.Rows))
	for i, r := range c.Rows {
		ids[i] = r.ID
	}
	return ids
}

// ClaimChunk claims the claimable rows of one chunk (pending, or retry_wait
// that is due) of a queued or running job, with a lease. A duplicate task
// finds nothing to claim. Rows come back in id order.
func (s *Store) ClaimChunk(ctx context.Context, jobID string, chunk int, lease time.Duration) (Claim, error) {
	token := uuid.NewString()
	rows, err := s.pool.Query(ctx, claimChunkSQL, jobID, chunk, token, lease.Milliseconds())
	if err != nil {
		return Claim{}, interpretError(err)
	}
	var claimed []Row
	var r Row
	_, err = pgx.ForEachRow(rows, []any{&r.ID, &r.JobID, &r.Chunk, &r.InputRow, &r.Ref, &r.Kind, &r.ProfileURL, &r.Name,
		&r.Company, &r.Domain, &r.Email, &r.Role, &r.State, &r.Attempts, &r.FoundProfileURL, &r.StagesDone, &r.AnyMatch}, func() error {
		claimed = append(claimed, r)
		r = Row{}
		return nil
	})
	if err != nil {
		return Claim{}, interpretError(err)
	}
	sort.Slice(claimed, func(i, j int) bool { return claimed[i].ID < claimed[j].ID })
	return Claim{Token: token, Rows: claimed}, nil
}

var claimChunkSQL = `
	UPDATE job_rows r SET state = 'in_flight', lease_token = $3, lease_until = now() + $4 * interval '1 millisecond',
		next_attempt_at = NULL, updated_at = now()
	WHERE r.job_id = $1 AND r.chunk = $2 -- job_rows_chunk
	  AND (r.state = 'pending' OR (r.state = 'retry_wait' AND r.next_attempt_at <= now()))
	  -- The job's state, read once (a one-time filter), not once per row: the
	  -- jobs row is updated by every credit reservation and settlement, and
	  -- reading it a hundred times a claim, through its versions and their
	  -- MultiXacts, made the claim cost grow with the job.
	  AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = $1 AND j.state IN ('queued', 'running'))
	RETURNING r.id, r.job_id::text, r.chunk, r.input_row, r.ref, r.input_kind, coalesce(r.profile_url, ''), coalesce(r.name, ''),
		coalesce(r.company, ''), coalesce(r.domain, ''), coalesce(r.email, ''), coalesce(r.role, ''), r.state, r.attempts,
		coalesce(r.found_profile_url, ''), r.stages_done, r.any_match`

// ExtendLease pushes the lease of the rows still held under token, and the
// lookup claims of the same token (by claimTTL).
func (s *Store) ExtendLease(ctx context.Context, token string, ids []int64, lease, claimTTL time.Duration) error {
	batch := &pgx.Batch{}
	batch.Queue(`UPDATE job_rows SET lease_until = now() + $3 * interval '1 millisecond'
		WHERE id = ANY($1) AND lease_token = $2 AND state = 'in_flight'`, ids, token, lease.Milliseconds())
	batch.Queue(extendClaimsSQL, token, claimTTL.Milliseconds())
	return interpretError(s.leases.SendBatch(ctx, batch).Close())
}

var extendClaimsSQL = `UPDATE lookup_claims l SET expires_at = now() + $2 * interval '1 millisecond' WHERE ` + tokenClaims("$1")

// ProfileResult is a profile found for a row.
type ProfileResult struct {
	ProfileURL, Name, Headline, Company, Role, Location, CompanySize, Industry string
	Technographics                                                             []string
	Raw                                                                        []byte
}

// EmailResult is an email found for a row.
type EmailResult struct {
	ProfileURL string
	Email      string
	Confidence float64
	Verified   bool
	Raw        []byte
}

// PhoneResult is the phone numbers found for a row; Phones is a JSON array.
type PhoneResult struct {
	ProfileURL    string
	Phones        []byte
	PrimaryNumber string
	PrimaryType   string
	Raw           []byte
}

// Provenance says where a stage's answer came from.
type Provenance struct {
	Source    string    // vendor or platform
	FromCache bool      // reused from an earlier paid answer
	FetchedAt time.Time // when the upstream answered
}

// CacheEntry is a paid answer to remember: a hit (Result set) or a no-match.
type CacheEntry struct {
	// RowID is the row whose answer it is: SaveOutcomes writes the entry
	// only with that row's own outcome (the row still there, held under the
	// claim, its person not suppressed), so an answer bought for a row an
	// erasure removed in flight is never remembered.
	RowID     int64
	Stage     domain.Stage
	Key       string
	Matched   bool
	Result    []byte
	FetchedAt time.Time
}

// Outcome is what a worker records for one claimed row after a stage or
// after the last one. Results and no-matches are added; the row moves to
// State (in_flight keeps the claim: more stages to go).
type Outcome struct {
	RowID int64

	Profile   *ProfileResult
	Email     *EmailResult
	Phone     *PhoneResult
	NoMatches []domain.Stage // stages looked up that found nothing
	Prov      Provenance

	StagesDone      []domain.Stage // the full new list
	FoundProfileURL string
	AnyMatch        bool // some stage found something

	State         domain.RowState // in_flight, pending (released), retry_wait, or terminal
	Reason        string          // for failed and skipped
	LastError     string
	NextAttemptAt time.Time // retry_wait
	FailedAttempt bool      // count one more failed attempt

	// PersonHashes are the keyed hashes (jobs.KeyedHash) of the inputs that
	// stand for the row's person: its own input and what was found for it.
	// When one is on the tenant's suppression list (the person was erased
	// while the row was in flight), the row is stored skipped with its input
	// blanked, and nothing of its outcome is written: no result, marker or
	// cache entry.
	PersonHashes [][]byte
}

// SaveOutcomes records outcomes of rows held under token, atomically. Rows
// whose claim was lost (lease expired and taken by another worker) or that
// are gone (an erasure removed them) are left alone: their results and cache
// entries are not written. A row whose person is suppressed (see
// Outcome.PersonHashes) is stored skipped, its input blanked, and nothing of
// its outcome is written. It returns the ids whose outcome was written: a
// row not among them is no longer the caller's to work on.
//
// The lookup claims of token (ClaimLookups) are given up in the same
// transaction: the answers they were held for are in the cache from its
// commit on. With nothing to save it does nothing, claims included (give
// them up with ReleaseLookups).
//
// Everything goes in one statement, so one round trip: the row states, then
// (in data-modifying CTEs joined to the rows the update wrote) the results of
// every stage and the no-match markers as multi-row INSERT ... SELECT FROM
// unnest(...), and the cache entries as one upsert. Never a statement per row.
func (s *Store) SaveOutcomes(ctx context.Context, tenant, token string, outs []Outcome, cache []CacheEntry) ([]int64, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	if len(outs) == 0 {
		// A cache entry is written only with its row's outcome.
		return nil, nil
	}
	// The rows written are in_flight (the statement takes no other): an
	// outcome must be a state the row lifecycle lets a claimed row move to.
	for _, o := range outs {
		if !domain.RowInFlight.CanBecome(o.State) {
			return nil, fmt.Errorf("store: save outcomes: row %d: a claimed row cannot become %q", o.RowID, o.State)
		}
	}
	var a saveArgs
	a.rows(outs)
	a.cache(cache)
	// One statement, all or nothing: run again if Postgres broke a deadlock
	// with it, or if it was cut before it committed (a save whose answer was
	// lost is looked up, never run twice: it would count attempts twice).
	var written []int64
	ids, committed, err := s.retryMarked(ctx, func(mark uuid.UUID) error {
		var err error
		written, err = s.saveOutcomes(ctx, tenant, token, &a, mark)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: save outcomes: %w", err)
	}
	if committed {
		return ids, nil
	}
	return written, nil
}

func (s *Store) saveOutcomes(ctx context.Context, tenant, token string, a *saveArgs, mark uuid.UUID) ([]int64, error) {
	rows, err := s.pool.Query(ctx, saveOutcomesSQL, pgx.StrictNamedArgs{
		"mark": mark,
		// row states
		"ids": a.ids, "states": a.states, "reasons": a.reasons, "last_errors": a.lastErrors, "next_at": a.next, "inc": a.inc,
		"found": a.found, "stages": a.stages, "token": token, "any_match": a.anyMatch,
		// profiles
		"p_row_id": a.p.rowID, "p_source": a.p.source, "p_from_cache": a.p.fromCache, "p_url": a.p.url, "p_name": a.p.name,
		"p_headline": a.p.headline, "p_company": a.p.company, "p_role": a.p.role, "p_location": a.p.location,
		"p_size": a.p.size, "p_industry": a.p.industry, "p_tech": a.p.tech, "p_raw": a.p.raw, "p_fetched": a.p.fetched,
		// emails
		"e_row_id": a.e.rowID, "e_source": a.e.source, "e_from_cache": a.e.fromCache, "e_url": a.e.url, "e_email": a.e.email,
		"e_confidence": a.e.confidence, "e_verified": a.e.verified, "e_raw": a.e.raw, "e_fetched": a.e.fetched,
		// phones
		"ph_row_id": a.ph.rowID, "ph_source": a.ph.source, "ph_from_cache": a.ph.fromCache, "ph_url": a.ph.url,
		"ph_phones": a.ph.phones, "ph_primary_number": a.ph.primaryNumber, "ph_primary_type": a.ph.primaryType,
		"ph_raw": a.ph.raw, "ph_fetched": a.ph.fetched,
		// no-match markers
		"n_row_id": a.n.rowID, "n_stage": a.n.stage, "n_source": a.n.source, "n_from_cache": a.n.fromCache,
		"n_checked": a.n.checked,
		// suppression
		"s_row_id": a.s.rowID, "s_hash": a.s.hash,
		// cache entries
		"tenant": tenant, "c_row_id": a.c.rowID, "c_stage": a.c.stage, "c_key": a.c.key, "c_matched": a.c.matched, "c_result": a.c.result,
		"c_fetched": a.c.fetched,
	})
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

var saveOutcomesSQL = `
WITH sup AS (
	-- Rows whose person is on the tenant's suppression list: erased while
	-- the row was in flight.
	SELECT x.row_id, min(e.created_at) AS erased_at
	FROM unnest(@s_row_id::bigint[], @s_hash::bytea[]) AS x(row_id, hash)
	JOIN suppressions s ON s.tenant = @tenant AND s.person_hash = x.hash
	JOIN erasures e ON e.id = s.erasure_id
	GROUP BY x.row_id
), u AS (
	UPDATE job_rows r SET
		state = CASE WHEN sup.row_id IS NOT NULL THEN 'skipped' ELSE u.state END,
		state_reason = CASE WHEN sup.row_id IS NOT NULL THEN 'suppressed: erased on ' || to_char(sup.erased_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')
			WHEN u.state IN ('failed', 'skipped') THEN u.reason ELSE '' END,
		last_error = CASE WHEN sup.row_id IS NOT NULL THEN '' WHEN u.last_error <> '' THEN u.last_error ELSE r.last_error END,
		attempts = r.attempts + u.inc,
		next_attempt_at = CASE WHEN u.state = 'retry_wait' AND sup.row_id IS NULL THEN u.next_at END,
		lease_until = CASE WHEN u.state = 'in_flight' AND sup.row_id IS NULL THEN r.lease_until END,
		lease_token = CASE WHEN u.state = 'in_flight' AND sup.row_id IS NULL THEN r.lease_token END,
		found_profile_url = CASE WHEN sup.row_id IS NULL THEN coalesce(nullif(u.found, ''), r.found_profile_url) END,
		stages_done = CASE WHEN u.stages = '' OR sup.row_id IS NOT NULL THEN '{}'::text[] ELSE string_to_array(u.stages, ',') END,
		any_match = sup.row_id IS NULL AND (r.any_match OR u.any_match),
		-- A suppressed row keeps no personal input (its ref stays: the caller's own id).
		profile_url = CASE WHEN sup.row_id IS NULL THEN r.profile_url END,
		name = CASE WHEN sup.row_id IS NULL THEN r.name END,
		company = CASE WHEN sup.row_id IS NULL THEN r.company END,
		domain = CASE WHEN sup.row_id IS NULL THEN r.domain END,
		email = CASE WHEN sup.row_id IS NULL THEN r.email END,
		role = CASE WHEN sup.row_id IS NULL THEN r.role END,
		finished_at = CASE WHEN u.state IN ('matched', 'no_match', 'failed', 'skipped') OR sup.row_id IS NOT NULL THEN now() END,
		updated_at = now()
	FROM unnest(@ids::bigint[], @states::text[], @reasons::text[], @last_errors::text[], @next_at::timestamptz[], @inc::int[], @found::text[], @stages::text[], @any_match::bool[])
		AS u(id, state, reason, last_error, next_at, inc, found, stages, any_match)
		LEFT JOIN sup ON sup.row_id = u.id
	WHERE r.id = u.id AND r.lease_token = @token AND r.state = 'in_flight'
	RETURNING r.id, r.job_id, r.input_row, sup.row_id IS NOT NULL AS suppressed
), kept AS (
	SELECT id, job_id FROM u WHERE NOT suppressed
), gone_extras AS (
	-- The extras of a suppressed row's input row go with its input.
	DELETE FROM job_input_extras x USING u WHERE u.suppressed AND x.job_id = u.job_id AND x.input_row = u.input_row
), p AS (
	INSERT INTO profile_results (job_id, row_id, source, from_cache, profile_url, name, headline, company, role,
		location, company_size, industry, technographics, raw, fetched_at)
	SELECT u.job_id, x.row_id, x.source, x.from_cache, x.url, nullif(x.name, ''), nullif(x.headline, ''), nullif(x.company, ''),
		nullif(x.role, ''), nullif(x.location, ''), nullif(x.size, ''), nullif(x.industry, ''),
		CASE WHEN x.tech IS NOT NULL THEN
			ARRAY(SELECT t.v FROM jsonb_array_elements_text(x.tech::jsonb) WITH ORDINALITY AS t(v, i) ORDER BY t.i) END,
		x.raw::jsonb, x.fetched
	FROM unnest(@p_row_id::bigint[], @p_source::text[], @p_from_cache::bool[], @p_url::text[], @p_name::text[], @p_headline::text[], @p_company::text[], @p_role::text[],
		@p_location::text[], @p_size::text[], @p_industry::text[], @p_tech::text[], @p_raw::text[], @p_fetched::timestamptz[])
		WITH ORDINALITY AS x(row_id, source, from_cache, url, name, headline, company, role, location, size, industry, tech, raw, fetched, ord)
	JOIN kept u ON u.id = x.row_id
	ORDER BY x.ord
	ON CONFLICT (row_id) DO NOTHING
), e AS (
	INSERT INTO email_results (job_id, row_id, source, from_cache, profile_url, email, confidence, verified, raw, fetched_at)
	SELECT u.job_id, x.row_id, x.source, x.from_cache, x.url, x.email, x.confidence, x.verified, x.raw::jsonb, x.fetched
	FROM unnest(@e_row_id::bigint[], @e_source::text[], @e_from_cache::bool[], @e_url::text[], @e_email::text[], @e_confidence::float8[], @e_verified::bool[], @e_raw::text[], @e_fetched::timestamptz[])
		WITH ORDINALITY AS x(row_id, source, from_cache, url, email, confidence, verified, raw, fetched, ord)
	JOIN kept u ON u.id = x.row_id
	ORDER BY x.ord
	ON CONFLICT (row_id) DO NOTHING
), ph AS (
	INSERT INTO phone_results (job_id, row_id, source, from_cache, profile_url, phones, primary_number, primary_type, raw, fetched_at)
	SELECT u.job_id, x.row_id, x.source, x.from_cache, x.url, x.phones::jsonb, nullif(x.primary_number, ''), nullif(x.primary_type, ''),
		x.raw::jsonb, x.fetched
	FROM unnest(@ph_row_id::bigint[], @ph_source::text[], @ph_from_cache::bool[], @ph_url::text[], @ph_phones::text[], @ph_primary_number::text[], @ph_primary_type::text[], @ph_raw::text[], @ph_fetched::timestamptz[])
		WITH ORDINALITY AS x(row_id, source, from_cache, url, phones, primary_number, primary_type, raw, fetched, ord)
	JOIN kept u ON u.id = x.row_id
	ORDER BY x.ord
	ON CONFLICT (row_id) DO NOTHING
), n AS (
	INSERT INTO no_matches (job_id, row_id, stage, source, from_cache, checked_at)
	SELECT u.job_id, x.row_id, x.stage, x.source, x.from_cache, x.checked
	FROM unnest(@n_row_id::bigint[], @n_stage::text[], @n_source::text[], @n_from_cache::bool[], @n_checked::timestamptz[])
		WITH ORDINALITY AS x(row_id, stage, source, from_cache, checked, ord)
	JOIN kept u ON u.id = x.row_id
	ORDER BY x.ord
	ON CONFLICT (row_id, stage) DO NOTHING
), c AS (
	-- Only with the outcome of the row that bought the answer; one entry
	-- per key (the newest), in (stage, key) order, so concurrent workers
	-- cannot deadlock.
	INSERT INTO lookup_cache (tenant, stage, input_key, matched, result, fetched_at)
	SELECT DISTINCT ON (x.stage, x.key) @tenant, x.stage, x.key, x.matched, x.result::jsonb, x.fetched
	FROM unnest(@c_row_id::bigint[], @c_stage::text[], @c_key::text[], @c_matched::bool[], @c_result::text[], @c_fetched::timestamptz[])
		WITH ORDINALITY AS x(row_id, stage, key, matched, result, fetched, ord)
	JOIN kept u ON u.id = x.row_id
	ORDER BY x.stage, x.key, x.fetched DESC, x.ord
	ON CONFLICT (tenant, stage, input_key) DO UPDATE SET matched = excluded.matched, result = excluded.result, fetched_at = excluded.fetched_at
		WHERE lookup_cache.fetched_at < excluded.fetched_at
), released AS (
	DELETE FROM lookup_claims l WHERE ` + tokenClaims("@token") + `
), ` + markSQL(`coalesce((SELECT array_agg(id) FROM kept), '{}')`) + `
SELECT id FROM kept`

// saveArgs are SaveOutcomes' parameters, one array per column.
type saveArgs struct {
	ids        []int64
	states     []string
	reasons    []string
	lastErrors []string
	next       []*time.Time
	inc        []int32
	found      []string
	stages     []string
	anyMatch   []bool
	p          struct {
		rowID                                                             []int64
		source                                                            []string
		fromCache                                                         []bool
		url, name, headline, company, role, location, size, industry, raw []string
		tech                                                              []*string
		fetched                                                           []time.Time
	}
	e struct {
		rowID                   []int64
		source, url, email, raw []string
		fromCache, verified     []bool
		confidence              []float64
		fetched                 []time.Time
	}
	ph struct {
		rowID                                                []int64
		source, url, phones, primaryNumber, primaryType, raw []string
		fromCache                                            []bool
		fetched                                              []time.Time
	}
	n struct {
		rowID         []int64
		stage, source []string
		fromCache     []bool
		checked       []time.Time
	}
	s struct {
		rowID []int64
		hash  [][]byte
	}
	c struct {
		rowID      []int64
		stage, key []string
		matched    []bool
		result     []*string
		fetched    []time.Time
	}
}

// joinStages is the stages as one comma-separated text (SaveOutcomes splits
// it again in SQL: a text[] per row does not fit an unnest of one array per column).
func joinStages(stages []domain.Stage) string {
	var b strings.Builder
	for i, s := range stages {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(string(s))
	}
	return b.String()
}

func (a *saveArgs) rows(outs []Outcome) {
	n := len(outs)
	a.ids = make([]int64, n)
	a.states = make([]string, n)
	a.reasons = make([]string, n)
	a.lastErrors = make([]string, n)
	a.next = make([]*time.Time, n)
	a.inc = make([]int32, n)
	a.found = make([]string, n)
	a.stages = make([]string, n)
	a.anyMatch = make([]bool, n)
	for i, o := range outs {
		a.ids[i] = o.RowID
		a.states[i] = string(o.State)
		a.reasons[i] = o.Reason
		a.lastErrors[i] = o.LastError
		if !o.NextAttemptAt.IsZero() {
			t := o.NextAttemptAt
			a.next[i] = &t
		}
		if o.FailedAttempt {
			a.inc[i] = 1
		}
		a.found[i] = o.FoundProfileURL
		a.stages[i] = joinStages(o.StagesDone)
		a.anyMatch[i] = o.AnyMatch

		src := o.Prov.Source
		if src == "" {
			src = "vendor"
		}
		if p := o.Profile; p != nil {
			var tech *string
			if p.Technographics != nil {
				b, _ := json.Marshal(p.Technographics)
				t := string(b)
				tech = &t
			}
			a.p.rowID = append(a.p.rowID, o.RowID)
			a.p.source = append(a.p.source, src)
			a.p.fromCache = append(a.p.fromCache, o.Prov.FromCache)
			a.p.url = append(a.p.url, p.ProfileURL)
			a.p.name = append(a.p.name, p.Name)
			a.p.headline = append(a.p.headline, p.Headline)
			a.p.company = append(a.p.company, p.Company)
			a.p.role = append(a.p.role, p.Role)
			a.p.location = append(a.p.location, p.Location)
			a.p.size = append(a.p.size, p.CompanySize)
			a.p.industry = append(a.p.industry, p.Industry)
			a.p.tech = append(a.p.tech, tech)
			a.p.raw = append(a.p.raw, string(jsonOrEmpty(p.Raw)))
			a.p.fetched = append(a.p.fetched, o.Prov.FetchedAt)
		}
		if e := o.Email; e != nil {
			a.e.rowID = append(a.e.rowID, o.RowID)
			a.e.source = append(a.e.source, src)
			a.e.fromCache = append(a.e.fromCache, o.Prov.FromCache)
			a.e.url = append(a.e.url, e.ProfileURL)
			a.e.email = append(a.e.email, e.Email)
			a.e.confidence = append(a.e.confidence, e.Confidence)
			a.e.verified = append(a.e.verified, e.Verified)
			a.e.raw = append(a.e.raw, string(jsonOrEmpty(e.Raw)))
			a.e.fetched = append(a.e.fetched, o.Prov.FetchedAt)
		}
		if p := o.Phone; p != nil {
			a.ph.rowID = append(a.ph.rowID, o.RowID)
			a.ph.source = append(a.ph.source, src)
			a.ph.fromCache = append(a.ph.fromCache, o.Prov.FromCache)
			a.ph.url = append(a.ph.url, p.ProfileURL)
			a.ph.phones = append(a.ph.phones, string(jsonOrArray(p.Phones)))
			a.ph.primaryNumber = append(a.ph.primaryNumber, p.PrimaryNumber)
			a.ph.primaryType = append(a.ph.primaryType, p.PrimaryType)
			a.ph.raw = append(a.ph.raw, string(jsonOrEmpty(p.Raw)))
			a.ph.fetched = append(a.ph.fetched, o.Prov.FetchedAt)
		}
		for _, h := range o.PersonHashes {
			a.s.rowID = append(a.s.rowID, o.RowID)
			a.s.hash = append(a.s.hash, h)
		}
		for _, st := range o.NoMatches {
			a.n.rowID = append(a.n.rowID, o.RowID)
			a.n.stage = append(a.n.stage, string(st))
			a.n.source = append(a.n.source, src)
			a.n.fromCache = append(a.n.fromCache, o.Prov.FromCache)
			a.n.checked = append(a.n.checked, o.Prov.FetchedAt)
		}
	}
}

// cache takes the cache entries as they are: SaveOutcomes keeps one per
// key, the newest, of the rows whose outcome it writes.
func (a *saveArgs) cache(cache []CacheEntry) {
	for _, c := range cache {
		var result *string
		if c.Matched {
			r := string(jsonOrEmpty(c.Result))
			result = &r
		}
		a.c.rowID = append(a.c.rowID, c.RowID)
		a.c.stage = append(a.c.stage, string(c.Stage))
		a.c.key = append(a.c.key, c.Key)
		a.c.matched = append(a.c.matched, c.Matched)
		a.c.result = append(a.c.result, result)
		a.c.fetched = append(a.c.fetched, c.FetchedAt)
	}
}

// ReleaseRows puts claimed rows back to pending without counting an attempt
// (the work was not done: budget exhausted, job paused, shutting down).
func (s *Store) ReleaseRows(ctx context.Context, token string, ids []int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE job_rows SET state = 'pending', lease_until = NULL, lease_token = NULL, updated_at = now()
		WHERE id = ANY($1) AND lease_token = $2 AND state = 'in_flight'`, ids, token)
	return interpretError(err)
}

var cachedAnswersSQL = `SELECT c.input_key, c.matched, coalesce(c.result::text, ''), c.fetched_at
	FROM unnest($3::text[]) AS k(key)
	CROSS JOIN LATERAL (SELECT * FROM lookup_cache c WHERE c.tenant = $1 AND c.stage = $2 AND c.input_key = k.key LIMIT 1) c
	WHERE c.fetched_at > $4`

func jsonOrEmpty(b []byte) []byte {
	if len(b) == 0 {
		return []byte("{}")
	}
	return b
}

func jsonOrArray(b []byte) []byte {
	if len(b) == 0 {
		return []byte("[]")
	}
	return b
}

// CachedAnswers returns the cached answers of a tenant for a stage and keys,
// fetched after newerThan, by key.
func (s *Store) CachedAnswers(ctx context.Context, tenant string, stage domain.Stage, keys []string, newerThan time.Time) (map[string]CacheEntry, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, nil
	}
	// One primary-key lookup per key, whatever the table's statistics say:
	// with "input_key = ANY($3)" and no statistics (a young table, autovacuum
	// off) the cached generic plan filtered every entry of the tenant's stage,
	// a scan that grew with every chunk saved.
	rows, err := s.pool.Query(ctx, cachedAnswersSQL, tenant, stage, keys, newerThan)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make(map[string]CacheEntry)
	var c CacheEntry
	var result string
	_, err = pgx.ForEachRow(rows, []any{&c.Key, &c.Matched, &result, &c.FetchedAt}, func() error {
		c.Stage = stage
		if result != "" {
			c.Result = []byte(result)
		}
		out[c.Key] = c
		c = CacheEntry{}
		return nil
	})
	return out, interpretError(err)
}
