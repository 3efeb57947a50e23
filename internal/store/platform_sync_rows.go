package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// SyncRow is a claimed member sync row with its member.
type SyncRow struct {
	ID       int64
	JobID    string
	Chunk    int
	Attempts int
	Ref      string
	Member   *PlatformMember // nil when the member is gone
}

// PlatformClaim is a set of member sync rows a worker holds under a lease.
type PlatformClaim struct {
	Token  string
	Tenant string
	Rows   []SyncRow
}

// IDs returns the claimed row ids.
func (c PlatformClaim) IDs() []int64 {
	ids := make([]int64, len(c.Rows))
	for i, r := range c.Rows {
		ids[i] = r.ID
	}
	return ids
}

// ClaimPlatformChunk claims the claimable member rows of one chunk (pending,
// or retry_wait due at now) of a queued or running job, with a lease, and
// returns them with their members. Due times are compared with now (the
// caller's clock: midnight UTC parking runs on it); leases use the
// database's clock like every other lease.
func (s *Store) ClaimPlatformChunk(ctx context.Context, jobID string, chunk int, lease time.Duration, now time.Time) (PlatformClaim, error) {
	token := uuid.NewString()
	rows, err := s.pool.Query(ctx, `
		WITH j AS (
			-- FOR SHARE: a claim waits for a pause being committed and sees it; a
			-- snapshot read alone could claim rows of a job paused meanwhile.
			SELECT id, tenant FROM jobs WHERE id = $1 AND state IN ('queued', 'running') FOR SHARE
		), c AS (
			UPDATE job_rows r SET state = 'in_flight', lease_token = $3, lease_until = now() + $4 * interval '1 millisecond',
				next_attempt_at = NULL, updated_at = now()
			FROM j
			WHERE j.id = r.job_id
			  AND r.job_id = $1 AND r.chunk = $2 AND r.input_kind = 'member'
			  AND (r.state = 'pending' OR (r.state = 'retry_wait' AND r.next_attempt_at <= $5))
			RETURNING r.id, r.job_id, r.chunk, r.attempts, r.ref, r.platform_member, j.tenant
		)
		SELECT c.id, c.job_id::text, c.chunk, c.attempts, c.ref, c.tenant, m.id IS NOT NULL, `+nullableMemberColumns+`
		FROM c LEFT JOIN platform_members m ON m.id = c.platform_member
		ORDER BY c.id`, jobID, chunk, token, lease.Milliseconds(), now)
	if err != nil {
		return PlatformClaim{}, interpretError(err)
	}
	defer rows.Close()
	claim := PlatformClaim{Token: token}
	for rows.Next() {
		var r SyncRow
		var hasMember bool
		var m nullableMember
		dest := append([]any{&r.ID, &r.JobID, &r.Chunk, &r.Attempts, &r.Ref, &claim.Tenant, &hasMember}, m.dest()...)
		if err := rows.Scan(dest...); err != nil {
			return PlatformClaim{}, interpretError(err)
		}
		if hasMember {
			pm := m.member()
			r.Member = &pm
		}
		claim.Rows = append(claim.Rows, r)
	}
	if err := rows.Err(); err != nil {
		return PlatformClaim{}, interpretError(err)
	}
	sort.Slice(claim.Rows, func(i, j int) bool { return claim.Rows[i].ID < claim.Rows[j].ID })
	return claim, nil
}

// nullableMemberColumns are memberColumns of a LEFT JOINed member (alias m).
var nullableMemberColumns = `coalesce(m.id::text, ''), coalesce(m.tenant, ''), coalesce(m.member_id, ''), coalesce(m.name, ''),
	coalesce(m.email, ''), coalesce(m.headline, ''), coalesce(m.status, ''), coalesce(m.status_reason, ''), m.token,
	coalesce(m.token_issued_at, 'epoch'), m.token_expires_at, coalesce(m.refreshable, false), m.refresh_expires_at,
	coalesce(m.scopes, '{}'), coalesce(m.profile::text, ''), coalesce(m.connected_at, 'epoch'), m.refreshed_at,
	m.last_synced_at, coalesce(m.updated_at, 'epoch')`

type nullableMember struct {
	m       PlatformMember
	profile string
}

func (n *nullableMember) dest() []any {
	m := &n.m
	return []any{&m.ID, &m.Tenant, &m.MemberID, &m.Name, &m.Email, &m.Headline, &m.Status, &m.StatusReason, &m.Token.Sealed,
		&m.Token.IssuedAt, &m.Token.ExpiresAt, &m.Token.Refreshable, &m.Token.RefreshExpiresAt, &m.Token.Scopes, &n.profile,
		&m.ConnectedAt, &m.RefreshedAt, &m.LastSyncedAt, &m.UpdatedAt}
}

func (n *nullableMember) member() PlatformMember {
	m := n.m
	if n.profile != "" {
		m.Profile = []byte(n.profile)
	}
	return m
}

// SyncOutcome is what a worker records for one claimed member sync row.
type SyncOutcome struct {
	RowID    int64
	MemberID string // enrichq's member id, to stamp last_synced_at with a profile
	// Profile, when set, is stored in profile_results with source platform.
	Profile   *ProfileResult
	FetchedAt time.Time

	State         domain.RowState // pending (released), retry_wait, matched, failed
	Reason        string          // for failed
	LastError     string
	NextAttemptAt time.Time // retry_wait
	FailedAttempt bool      // count one more failed attempt
}

// SavePlatformOutcomes records outcomes of member rows held under token, in
// one transaction; rows whose claim was lost are left alone. A profile is
// also kept on its member (profile, name, headline, last_synced_at). It
// returns the ids written.
func (s *Store) SavePlatformOutcomes(ctx context.Context, token string, outs []SyncOutcome) ([]int64, error) {
	if len(outs) == 0 {
		return nil, nil
	}
	args, err := syncOutcomeArgs(token, outs)
	if err != nil {
		return nil, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, interpretError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	rows, err := tx.Query(ctx, savePlatformRowsSQL, args)
	if err != nil {
		return nil, interpretError(err)
	}
	written, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, interpretError(err)
	}
	if batch := platformResults(outs, written); batch.Len() > 0 {
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return nil, fmt.Errorf("store: save platform results: %w", interpretError(err))
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, interpretError(err)
	}
	return written, nil
}

// syncOutcomeArgs are savePlatformRowsSQL's arguments, one array per column.
// An outcome must be a state the row lifecycle lets a claimed row move to.
func syncOutcomeArgs(token string, outs []SyncOutcome) (pgx.StrictNamedArgs, error) {
	n := len(outs)
	ids := make([]int64, n)
	states := make([]string, n)
	reasons := make([]string, n)
	lastErrors := make([]string, n)
	next := make([]*time.Time, n)
	inc := make([]int32, n)
	matched := make([]bool, n)
	for i, o := range outs {
		if !domain.RowInFlight.CanBecome(o.State) {
			return nil, fmt.Errorf("store: save platform outcomes: row %d: a claimed row cannot become %q", o.RowID, o.State)
		}
		ids[i], states[i], reasons[i], lastErrors[i] = o.RowID, string(o.State), o.Reason, o.LastError
		if !o.NextAttemptAt.IsZero() {
			t := o.NextAttemptAt
			next[i] = &t
		}
		if o.FailedAttempt {
			inc[i] = 1
		}
		matched[i] = o.Profile != nil
	}
	return pgx.StrictNamedArgs{"ids": ids, "states": states, "reasons": reasons, "last_errors": lastErrors,
		"next_at": next, "inc": inc, "matched": matched, "token": token}, nil
}

// savePlatformRowsSQL moves the member rows held under @token to their
// outcome's state and returns the ids it wrote.
var savePlatformRowsSQL = `
		UPDATE job_rows r SET
			state = u.state,
			state_reason = CASE WHEN u.state IN ('failed', 'skipped') THEN u.reason ELSE '' END,
			last_error = CASE WHEN u.last_error <> '' THEN u.last_error ELSE r.last_error END,
			attempts = r.attempts + u.inc,
			next_attempt_at = CASE WHEN u.state = 'retry_wait' THEN u.next_at END,
			lease_until = NULL, lease_token = NULL,
			stages_done = CASE WHEN u.matched THEN '{profile}'::text[] ELSE r.stages_done END,
			any_match = r.any_match OR u.matched,
			finished_at = CASE WHEN u.state IN ('matched', 'no_match', 'failed', 'skipped') THEN now() END,
			updated_at = now()
		FROM unnest(@ids::bigint[], @states::text[], @reasons::text[], @last_errors::text[], @next_at::timestamptz[], @inc::int[],
				@matched::bool[])
			AS u(id, state, reason, last_error, next_at, inc, matched)
		WHERE r.id = u.id AND r.lease_token = @token AND r.state = 'in_flight'
		RETURNING r.id`

// platformResults is the batch that stores the profiles of the rows written,
// each also kept on its member (profile, name, headline, last_synced_at).
func platformResults(outs []SyncOutcome, written []int64) *pgx.Batch {
	owned := make(map[int64]bool, len(written))
	for _, id := range written {
		owned[id] = true
	}
	batch := &pgx.Batch{}
	for _, o := range outs {
		p := o.Profile
		if !owned[o.RowID] || p == nil {
			continue
		}
		batch.Queue(`INSERT INTO profile_results (job_id, row_id, source, from_cache, profile_url, name, headline, company, role,
				location, company_size, industry, technographics, raw, fetched_at)
			SELECT job_id, id, 'platform', false, @profile_url, @name, @headline, @company, @role, @location, @company_size,
				@industry, @technographics, @raw, @fetched_at FROM job_rows WHERE id = @row_id
			ON CONFLICT (row_id) DO NOTHING`,
			pgx.StrictNamedArgs{"row_id": o.RowID, "profile_url": p.ProfileURL, "name": nullIfEmpty(p.Name), "headline": nullIfEmpty(p.Headline),
				"company": nullIfEmpty(p.Company), "role": nullIfEmpty(p.Role), "location": nullIfEmpty(p.Location),
				"company_size": nullIfEmpty(p.CompanySize), "industry": nullIfEmpty(p.Industry), "technographics": p.Technographics,
				"raw": jsonOrEmpty(p.Raw), "fetched_at": o.FetchedAt})
		if o.MemberID != "" {
			batch.Queue(`UPDATE platform_members SET profile = $2, name = coalesce(nullif($3, ''), name),
					headline = coalesce(nullif($4, ''), headline), last_synced_at = $5, updated_at = now()
				WHERE id = $1`, o.MemberID, jsonOrEmpty(p.Raw), p.Name, p.Headline, o.FetchedAt)
		}
	}
	return batch
}

// StoredProfile is where a row's stored profile came from and when it was
// read: what an operator checks of a member sync's results.
type StoredProfile struct {
	RowID     int64
	Source    string // vendor or platform
	Raw       []byte // the answer as received
	FetchedAt time.Time
}

// StoredProfiles returns the profiles stored for the rows of job jobID, in row order.
func (s *Store) StoredProfiles(ctx context.Context, jobID string) ([]StoredProfile, error) {
	rows, err := s.pool.Query(ctx, `SELECT row_id, source, raw, fetched_at FROM profile_results
		WHERE job_id = $1 ORDER BY row_id`, jobID)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[StoredProfile])
	return out, interpretError(err)
}
