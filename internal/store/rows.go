package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

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
	Kind            string
	ProfileURL      string
	Name            string
	Company         string
	Email           string
	Role            string
	State           string
	Attempts        int
	FoundProfileURL string
	StagesDone      []string
	AnyMatch        bool
}

// Done reports whether the row already has an outcome for stage.
func (r Row) Done(stage string) bool {
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
	rows, err := s.pool.Query(ctx, `
		UPDATE job_rows r SET state = 'in_flight', lease_token = $3, lease_until = now() + $4 * interval '1 millisecond',
			next_attempt_at = NULL, updated_at = now()
		FROM jobs j
		WHERE j.id = r.job_id AND j.state IN ('queued', 'running')
		  AND r.job_id = $1 AND r.chunk = $2
		  AND (r.state = 'pending' OR (r.state = 'retry_wait' AND r.next_attempt_at <= now()))
		RETURNING r.id, r.job_id::text, r.chunk, r.input_row, r.ref, r.input_kind, coalesce(r.profile_url, ''), coalesce(r.name, ''),
			coalesce(r.company, ''), coalesce(r.email, ''), coalesce(r.role, ''), r.state, r.attempts,
			coalesce(r.found_profile_url, ''), r.stages_done, r.any_match`,
		jobID, chunk, token, lease.Milliseconds())
	if err != nil {
		return Claim{}, interpretError(err)
	}
	var claimed []Row
	var r Row
	_, err = pgx.ForEachRow(rows, []any{&r.ID, &r.JobID, &r.Chunk, &r.InputRow, &r.Ref, &r.Kind, &r.ProfileURL, &r.Name,
		&r.Company, &r.Email, &r.Role, &r.State, &r.Attempts, &r.FoundProfileURL, &r.StagesDone, &r.AnyMatch}, func() error {
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

// ExtendLease pushes the lease of the rows still held under token.
func (s *Store) ExtendLease(ctx context.Context, token string, ids []int64, lease time.Duration) error {
	_, err := s.pool.Exec(ctx, `UPDATE job_rows SET lease_until = now() + $3 * interval '1 millisecond'
		WHERE id = ANY($1) AND lease_token = $2 AND state = 'in_flight'`, ids, token, lease.Milliseconds())
	return interpretError(err)
}

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
	Stage     string
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
	NoMatches []string // stages looked up that found nothing
	Prov      Provenance

	StagesDone      []string // the full new list
	FoundProfileURL string
	AnyMatch        bool // some stage found something

	State         string // in_flight, pending (released), retry_wait, or terminal
	Reason        string // for failed and skipped
	LastError     string
	NextAttemptAt time.Time // retry_wait
	FailedAttempt bool      // count one more failed attempt
}

// SaveOutcomes records outcomes of rows held under token, in one
// transaction. Rows whose claim was lost (lease expired and taken by
// another worker) are left alone: their results are not written. It returns
// the ids written.
func (s *Store) SaveOutcomes(ctx context.Context, tenant, token string, outs []Outcome, cache []CacheEntry) ([]int64, error) {
	if len(outs) == 0 && len(cache) == 0 {
		return nil, nil
	}
	n := len(outs)
	ids := make([]int64, n)
	states := make([]string, n)
	reasons := make([]string, n)
	lastErrors := make([]string, n)
	next := make([]*time.Time, n)
	inc := make([]int32, n)
	found := make([]string, n)
	stages := make([]string, n)
	anyMatch := make([]bool, n)
	for i, o := range outs {
		ids[i] = o.RowID
		states[i] = o.State
		reasons[i] = o.Reason
		lastErrors[i] = o.LastError
		if !o.NextAttemptAt.IsZero() {
			t := o.NextAttemptAt
			next[i] = &t
		}
		if o.FailedAttempt {
			inc[i] = 1
		}
		found[i] = o.FoundProfileURL
		stages[i] = strings.Join(o.StagesDone, ",")
		anyMatch[i] = o.AnyMatch
	}

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, interpretError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck

	var written []int64
	if n > 0 {
		rows, err := tx.Query(ctx, `
			UPDATE job_rows r SET
				state = u.state,
				state_reason = CASE WHEN u.state IN ('failed', 'skipped') THEN u.reason ELSE '' END,
				last_error = CASE WHEN u.last_error <> '' THEN u.last_error ELSE r.last_error END,
				attempts = r.attempts + u.inc,
				next_attempt_at = CASE WHEN u.state = 'retry_wait' THEN u.next_at END,
				lease_until = CASE WHEN u.state = 'in_flight' THEN r.lease_until END,
				lease_token = CASE WHEN u.state = 'in_flight' THEN r.lease_token END,
				found_profile_url = coalesce(nullif(u.found, ''), r.found_profile_url),
				stages_done = CASE WHEN u.stages = '' THEN '{}'::text[] ELSE string_to_array(u.stages, ',') END,
				any_match = r.any_match OR u.any_match,
				finished_at = CASE WHEN u.state IN ('matched', 'no_match', 'failed', 'skipped') THEN now() END,
				updated_at = now()
			FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::int[], $7::text[], $8::text[], $10::bool[])
				AS u(id, state, reason, last_error, next_at, inc, found, stages, any_match)
			WHERE r.id = u.id AND r.lease_token = $9 AND r.state = 'in_flight'
			RETURNING r.id`,
			ids, states, reasons, lastErrors, next, inc, found, stages, token, anyMatch)
		if err != nil {
			return nil, interpretError(err)
		}
		written, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return nil, interpretError(err)
		}
	}
	owned := make(map[int64]bool, len(written))
	for _, id := range written {
		owned[id] = true
	}

	batch := &pgx.Batch{}
	for _, o := range outs {
		if !owned[o.RowID] {
			continue
		}
		src := o.Prov.Source
		if src == "" {
			src = "vendor"
		}
		if p := o.Profile; p != nil {
			batch.Queue(`INSERT INTO profile_results (job_id, row_id, source, from_cache, profile_url, name, headline, company, role,
				location, company_size, industry, technographics, raw, fetched_at)
				SELECT job_id, id, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14 FROM job_rows WHERE id = $1
				ON CONFLICT (row_id) DO NOTHING`,
				o.RowID, src, o.Prov.FromCache, p.ProfileURL, nullIfEmpty(p.Name), nullIfEmpty(p.Headline), nullIfEmpty(p.Company),
				nullIfEmpty(p.Role), nullIfEmpty(p.Location), nullIfEmpty(p.CompanySize), nullIfEmpty(p.Industry), p.Technographics,
				jsonOrEmpty(p.Raw), o.Prov.FetchedAt)
		}
		if e := o.Email; e != nil {
			batch.Queue(`INSERT INTO email_results (job_id, row_id, source, from_cache, profile_url, email, confidence, verified, raw, fetched_at)
				SELECT job_id, id, $2, $3, $4, $5, $6, $7, $8, $9 FROM job_rows WHERE id = $1
				ON CONFLICT (row_id) DO NOTHING`,
				o.RowID, src, o.Prov.FromCache, e.ProfileURL, e.Email, e.Confidence, e.Verified, jsonOrEmpty(e.Raw), o.Prov.FetchedAt)
		}
		if p := o.Phone; p != nil {
			batch.Queue(`INSERT INTO phone_results (job_id, row_id, source, from_cache, profile_url, phones, primary_number, primary_type, raw, fetched_at)
				SELECT job_id, id, $2, $3, $4, $5, $6, $7, $8, $9 FROM job_rows WHERE id = $1
				ON CONFLICT (row_id) DO NOTHING`,
				o.RowID, src, o.Prov.FromCache, p.ProfileURL, jsonOrArray(p.Phones), nullIfEmpty(p.PrimaryNumber), nullIfEmpty(p.PrimaryType),
				jsonOrEmpty(p.Raw), o.Prov.FetchedAt)
		}
		for _, st := range o.NoMatches {
			batch.Queue(`INSERT INTO no_matches (job_id, row_id, stage, source, from_cache, checked_at)
				SELECT job_id, id, $2, $3, $4, $5 FROM job_rows WHERE id = $1
				ON CONFLICT (row_id, stage) DO NOTHING`,
				o.RowID, st, src, o.Prov.FromCache, o.Prov.FetchedAt)
		}
	}
	// Upsert cache entries in a stable order so concurrent workers cannot deadlock.
	sort.Slice(cache, func(i, j int) bool {
		if cache[i].Stage != cache[j].Stage {
			return cache[i].Stage < cache[j].Stage
		}
		return cache[i].Key < cache[j].Key
	})
	for _, c := range cache {
		var result any
		if c.Matched {
			result = string(jsonOrEmpty(c.Result))
		}
		batch.Queue(`INSERT INTO lookup_cache (tenant, stage, input_key, matched, result, fetched_at) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (tenant, stage, input_key) DO UPDATE SET matched = excluded.matched, result = excluded.result, fetched_at = excluded.fetched_at
			WHERE lookup_cache.fetched_at < excluded.fetched_at`,
			tenant, c.Stage, c.Key, c.Matched, result, c.FetchedAt)
	}
	if batch.Len() > 0 {
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return nil, fmt.Errorf("store: save results: %w", interpretError(err))
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, interpretError(err)
	}
	return written, nil
}

// ReleaseRows puts claimed rows back to pending without counting an attempt
// (the work was not done: budget exhausted, job paused, shutting down).
func (s *Store) ReleaseRows(ctx context.Context, token string, ids []int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE job_rows SET state = 'pending', lease_until = NULL, lease_token = NULL, updated_at = now()
		WHERE id = ANY($1) AND lease_token = $2 AND state = 'in_flight'`, ids, token)
	return interpretError(err)
}

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
func (s *Store) CachedAnswers(ctx context.Context, tenant, stage string, keys []string, newerThan time.Time) (map[string]CacheEntry, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT input_key, matched, coalesce(result::text, ''), fetched_at FROM lookup_cache
		WHERE tenant = $1 AND stage = $2 AND input_key = ANY($3) AND fetched_at > $4`, tenant, stage, keys, newerThan)
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
