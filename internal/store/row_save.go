package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

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
	// Status is the verify stage's verdict on Email (valid, invalid,
	// accept_all, webmail, disposable, unknown); "" when not verified.
	Status string
	Raw    []byte
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
		"e_confidence": a.e.confidence, "e_verified": a.e.verified, "e_status": a.e.status, "e_raw": a.e.raw, "e_fetched": a.e.fetched,
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
	INSERT INTO email_results (job_id, row_id, source, from_cache, profile_url, email, confidence, verified, email_status, raw, fetched_at)
	SELECT u.job_id, x.row_id, x.source, x.from_cache, x.url, x.email, x.confidence, x.verified, x.status, x.raw::jsonb, x.fetched
	FROM unnest(@e_row_id::bigint[], @e_source::text[], @e_from_cache::bool[], @e_url::text[], @e_email::text[], @e_confidence::float8[], @e_verified::bool[], @e_status::text[], @e_raw::text[], @e_fetched::timestamptz[])
		WITH ORDINALITY AS x(row_id, source, from_cache, url, email, confidence, verified, status, raw, fetched, ord)
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
