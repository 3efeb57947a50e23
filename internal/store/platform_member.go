package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Member statuses.
const (
	MemberActive      = "active"
	MemberNeedsReauth = "needs_reauth"
)

// SourcePlatform is profile_results.source for profiles read from the platform.
const SourcePlatform = "platform"

// PlatformToken is a member's OAuth token as stored: sealed (encrypted by the
// caller), with what the scheduler needs to know of its life in the clear.
type PlatformToken struct {
	Sealed           []byte
	IssuedAt         time.Time
	ExpiresAt        *time.Time // nil: no lifetime given
	Refreshable      bool
	RefreshExpiresAt *time.Time
	Scopes           []string
}

// PlatformMember is a member who connected their platform account to a tenant.
type PlatformMember struct {
	ID           string // enrichq's id (uuid)
	Tenant       string
	MemberID     string // the platform's id
	Name         string
	Email        string
	Headline     string
	Status       string
	StatusReason string
	Token        PlatformToken
	Profile      []byte // the last /rest/me answer
	ConnectedAt  time.Time
	RefreshedAt  *time.Time
	LastSyncedAt *time.Time
	UpdatedAt    time.Time
}

// ConnectionEndsAt is when the member's connection stops working unless they
// reconnect: the refresh token's expiry when one is held (nil when unknown),
// else the access token's.
func (m PlatformMember) ConnectionEndsAt() *time.Time {
	if m.Token.Refreshable {
		return m.Token.RefreshExpiresAt
	}
	return m.Token.ExpiresAt
}

// memberCols is the column list scanMember reads, of table alias a ("" or "m.").
func memberCols(a string) string {
	return fmt.Sprintf(`%[1]sid::text, %[1]stenant, %[1]smember_id, %[1]sname, %[1]semail, %[1]sheadline, %[1]sstatus,
	%[1]sstatus_reason, %[1]stoken, %[1]stoken_issued_at, %[1]stoken_expires_at, %[1]srefreshable, %[1]srefresh_expires_at,
	%[1]sscopes, coalesce(%[1]sprofile::text, ''), %[1]sconnected_at, %[1]srefreshed_at, %[1]slast_synced_at, %[1]supdated_at`, a)
}

var memberColumns = memberCols("")

func scanMember(row pgx.Row) (PlatformMember, error) {
	var m PlatformMember
	var profile string
	err := row.Scan(&m.ID, &m.Tenant, &m.MemberID, &m.Name, &m.Email, &m.Headline, &m.Status, &m.StatusReason, &m.Token.Sealed,
		&m.Token.IssuedAt, &m.Token.ExpiresAt, &m.Token.Refreshable, &m.Token.RefreshExpiresAt, &m.Token.Scopes, &profile,
		&m.ConnectedAt, &m.RefreshedAt, &m.LastSyncedAt, &m.UpdatedAt)
	if err != nil {
		return PlatformMember{}, interpretError(err)
	}
	if profile != "" {
		m.Profile = []byte(profile)
	}
	return m, nil
}

func collectMembers(rows pgx.Rows, err error) ([]PlatformMember, error) {
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []PlatformMember
	for rows.Next() {
		m, err := scanMember(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, interpretError(rows.Err())
}

// ---- connect requests ----

// SaveConnectState records a connect request: the state's hash, its tenant
// and its sealed PKCE verifier, valid until expiresAt.
func (s *Store) SaveConnectState(ctx context.Context, stateHash []byte, tenant string, sealedVerifier []byte, now, expiresAt time.Time) error {
	if err := needTenant(tenant); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO platform_connect_states (state_hash, tenant, verifier, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)`, stateHash, tenant, sealedVerifier, now, expiresAt)
	return interpretError(err)
}

// TakeConnectState consumes a connect request: it is deleted whatever
// happens next, so a state works once. An unknown or expired state is
// ErrNotFound.
func (s *Store) TakeConnectState(ctx context.Context, stateHash []byte, now time.Time) (tenant string, sealedVerifier []byte, err error) {
	var expires time.Time
	err = s.pool.QueryRow(ctx, `DELETE FROM platform_connect_states WHERE state_hash = $1 RETURNING tenant, verifier, expires_at`,
		stateHash).Scan(&tenant, &sealedVerifier, &expires)
	if err != nil {
		return "", nil, interpretError(err)
	}
	if !now.Before(expires) {
		return "", nil, ErrNotFound
	}
	return tenant, sealedVerifier, nil
}

// DeleteExpiredConnectStates removes connect requests that expired before now.
func (s *Store) DeleteExpiredConnectStates(ctx context.Context, now time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM platform_connect_states WHERE expires_at <= $1`, now)
	if err != nil {
		return 0, interpretError(err)
	}
	return int(tag.RowsAffected()), nil
}

// ---- members ----

// ConnectedMember is what a completed connect flow stores.
type ConnectedMember struct {
	Tenant   string
	MemberID string
	Name     string
	Email    string
	Headline string
	Profile  []byte
	Token    PlatformToken
	At       time.Time
}

// UpsertPlatformMember stores a member who connected (or reconnected: the
// token is replaced and the member is active again).
func (s *Store) UpsertPlatformMember(ctx context.Context, c ConnectedMember) (PlatformMember, error) {
	if err := needTenant(c.Tenant); err != nil {
		return PlatformMember{}, err
	}
	scopes := c.Token.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return scanMember(s.pool.QueryRow(ctx, `
		INSERT INTO platform_members (tenant, member_id, name, email, headline, token, token_issued_at, token_expires_at,
			refreshable, refresh_expires_at, scopes, profile, connected_at, last_synced_at)
		VALUES (@tenant, @member_id, @name, @email, @headline, @token, @issued_at, @expires_at, @refreshable, @refresh_expires_at,
			@scopes, @profile, @at, @at)
		ON CONFLICT (tenant, member_id) DO UPDATE SET
			name = excluded.name, email = excluded.email, headline = excluded.headline,
			status = 'active', status_reason = '', token = excluded.token, token_issued_at = excluded.token_issued_at,
			token_expires_at = excluded.token_expires_at, refreshable = excluded.refreshable,
			refresh_expires_at = excluded.refresh_expires_at, scopes = excluded.scopes, profile = excluded.profile,
			connected_at = excluded.connected_at, last_synced_at = excluded.last_synced_at, expiry_warned_at = NULL,
			updated_at = now()
		RETURNING `+memberColumns,
		pgx.StrictNamedArgs{"tenant": c.Tenant, "member_id": c.MemberID, "name": c.Name, "email": c.Email, "headline": c.Headline,
			"token": c.Token.Sealed, "issued_at": c.Token.IssuedAt, "expires_at": c.Token.ExpiresAt, "refreshable": c.Token.Refreshable,
			"refresh_expires_at": c.Token.RefreshExpiresAt, "scopes": scopes, "profile": jsonOrNull(c.Profile), "at": c.At}))
}

func jsonOrNull(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// GetPlatformMember returns a member of tenant by enrichq's id; another
// tenant's is ErrNotFound, and an empty tenant ErrNoTenant.
func (s *Store) GetPlatformMember(ctx context.Context, tenant, id string) (PlatformMember, error) {
	if err := needTenant(tenant); err != nil {
		return PlatformMember{}, err
	}
	if _, err := uuid.Parse(id); err != nil {
		return PlatformMember{}, ErrNotFound
	}
	return scanMember(s.pool.QueryRow(ctx, `SELECT `+memberColumns+` FROM platform_members WHERE id = $1 AND tenant = $2`, id, tenant))
}

// MemberFilter selects members to list.
type MemberFilter struct {
	// EndingBefore keeps members whose connection ends (see
	// PlatformMember.ConnectionEndsAt) before this time, and members who
	// already need to reconnect. Nil: every member.
	EndingBefore *time.Time
	// Status keeps members in this status; "" any.
	Status string
	// After is the id of the last member of the previous page ("" from the start).
	After string
	Limit int
}

// ListPlatformMembers lists a tenant's members in the order they connected.
func (s *Store) ListPlatformMembers(ctx context.Context, tenant string, f MemberFilter) ([]PlatformMember, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	var after *string
	if f.After != "" {
		if _, err := uuid.Parse(f.After); err != nil {
			return nil, fmt.Errorf("store: bad cursor id")
		}
		after = &f.After
	}
	return collectMembers(s.pool.Query(ctx, `SELECT `+memberColumns+` FROM platform_members m
		WHERE tenant = $1 AND ($2 = '' OR status = $2)
		  AND ($3::timestamptz IS NULL OR status = 'needs_reauth'
		       OR (CASE WHEN refreshable THEN refresh_expires_at ELSE token_expires_at END) <= $3)
		  AND ($4::uuid IS NULL OR (connected_at, id) > (SELECT connected_at, id FROM platform_members WHERE id = $4))
		ORDER BY connected_at, id LIMIT $5`, tenant, f.Status, f.EndingBefore, after, f.Limit))
}

// MemberUpdate is what a token refresh decided (FinishMemberRefresh).
type MemberUpdate struct {
	// Token, when set, replaces the member's token (a refresh).
	Token *PlatformToken
	// NeedsReauth, when set, marks the member needs_reauth with this reason.
	NeedsReauth string
}

// ClaimMemberRefresh takes, for lease, the right to refresh the member's
// token, and returns the member as stored. claim is "" when another
// refresher holds a live claim (or the member is not active): wait for its
// token rather than spend the refresh token twice. The claim is one
// statement: no transaction stays open while the platform is called.
func (s *Store) ClaimMemberRefresh(ctx context.Context, id string, lease time.Duration) (m PlatformMember, claim string, err error) {
	token := uuid.NewString()
	var won bool
	row := s.pool.QueryRow(ctx, `UPDATE platform_members SET
			refresh_claim = CASE WHEN `+claimFree+` THEN $2::uuid ELSE refresh_claim END,
			refresh_claim_until = CASE WHEN `+claimFree+` THEN now() + $3 * interval '1 millisecond' ELSE refresh_claim_until END
		WHERE id = $1
		RETURNING `+memberColumns+`, coalesce(refresh_claim = $2::uuid, false)`, id, token, lease.Milliseconds())
	m, err = scanMember(extraScan{row, &won})
	if err != nil || !won {
		return m, "", err
	}
	return m, token, nil
}

// claimFree: the member's token may be claimed for a refresh.
const claimFree = `status = 'active' AND (refresh_claim IS NULL OR refresh_claim_until < now())`

// extraScan scans a row of memberColumns followed by more columns.
type extraScan struct {
	row   pgx.Row
	extra *bool
}

func (e extraScan) Scan(dest ...any) error { return e.row.Scan(append(dest, e.extra)...) }

// FinishMemberRefresh applies what the refresh under claim decided and
// gives the claim up, in one short transaction, and returns the member as
// stored afterwards. A claim that lapsed and was taken by another refresher
// is ErrConflict: nothing is applied.
func (s *Store) FinishMemberRefresh(ctx context.Context, id, claim string, u MemberUpdate) (PlatformMember, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return PlatformMember{}, interpretError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	m, err := scanMember(tx.QueryRow(ctx, `SELECT `+memberColumns+` FROM platform_members WHERE id = $1 AND refresh_claim = $2::uuid FOR UPDATE`, id, claim))
	if errors.Is(err, ErrNotFound) {
		return PlatformMember{}, fmt.Errorf("%w: the refresh claim of member %s lapsed", ErrConflict, id)
	}
	if err != nil {
		return PlatformMember{}, err
	}
	if t := u.Token; t != nil {
		scopes := t.Scopes
		if scopes == nil {
			scopes = m.Token.Scopes
		}
		if _, err := tx.Exec(ctx, `UPDATE platform_members SET token = @token, token_issued_at = @issued_at, token_expires_at = @expires_at,
				refreshable = @refreshable, refresh_expires_at = @refresh_expires_at, scopes = @scopes, refreshed_at = @issued_at,
				expiry_warned_at = NULL, updated_at = now()
			WHERE id = @id`, pgx.StrictNamedArgs{"id": id, "token": t.Sealed, "issued_at": t.IssuedAt, "expires_at": t.ExpiresAt,
			"refreshable": t.Refreshable, "refresh_expires_at": t.RefreshExpiresAt, "scopes": scopes}); err != nil {
			return m, interpretError(err)
		}
	}
	if u.NeedsReauth != "" {
		if _, err := tx.Exec(ctx, `UPDATE platform_members SET status = 'needs_reauth', status_reason = $2, updated_at = now()
			WHERE id = $1`, id, u.NeedsReauth); err != nil {
			return m, interpretError(err)
		}
	}
	m, err = scanMember(tx.QueryRow(ctx, `UPDATE platform_members SET refresh_claim = NULL, refresh_claim_until = NULL
		WHERE id = $1 RETURNING `+memberColumns, id))
	if err != nil {
		return PlatformMember{}, err
	}
	return m, interpretError(tx.Commit(ctx))
}

// MarkMemberNeedsReauth marks an active member needs_reauth with a reason;
// it reports whether this call changed the member.
func (s *Store) MarkMemberNeedsReauth(ctx context.Context, id, reason string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE platform_members SET status = 'needs_reauth', status_reason = $2, updated_at = now()
		WHERE id = $1 AND status = 'active'`, id, reason)
	if err != nil {
		return false, interpretError(err)
	}
	return tag.RowsAffected() == 1, nil
}

// MembersToRefresh returns active members holding a refresh token (not known
// to be expired at now) whose access token is due for renewal: it expires
// within window, or within half its life when that is shorter (so a
// short-lived token is not refreshed at every sweep).
func (s *Store) MembersToRefresh(ctx context.Context, now time.Time, window time.Duration, limit int) ([]PlatformMember, error) {
	return collectMembers(s.pool.Query(ctx, `SELECT `+memberColumns+` FROM platform_members
		WHERE status = 'active' AND refreshable AND (refresh_expires_at IS NULL OR refresh_expires_at > $1)
		  AND token_expires_at IS NOT NULL
		  AND token_expires_at - least($2::bigint * interval '1 millisecond', (token_expires_at - token_issued_at) / 2) <= $1::timestamptz
		ORDER BY token_expires_at LIMIT $3`, now, window.Milliseconds(), limit))
}

// ExpireMembers marks needs_reauth the active members whose connection ended
// before now (access token expired, and no refresh token that still works)
// and returns them.
func (s *Store) ExpireMembers(ctx context.Context, now time.Time, limit int) ([]PlatformMember, error) {
	return collectMembers(s.pool.Query(ctx, `
		UPDATE platform_members m SET status = 'needs_reauth',
			status_reason = 'token expired at ' || to_char(m.token_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
				|| CASE WHEN m.refreshable THEN ' and its refresh token at ' ||
					to_char(m.refresh_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') ELSE ' (no refresh token)' END
				|| '; the member must reconnect',
			updated_at = now()
		FROM (SELECT id FROM platform_members WHERE status = 'active' AND token_expires_at <= $1
		        AND (NOT refreshable OR refresh_expires_at <= $1)
		      ORDER BY token_expires_at LIMIT $2 FOR UPDATE SKIP LOCKED) x
		WHERE m.id = x.id
		RETURNING `+memberCols("m."), now, limit))
}

// MembersToWarn returns active members whose connection ends within window
// of now and who were not warned within rewarn, and stamps them warned.
func (s *Store) MembersToWarn(ctx context.Context, now time.Time, window, rewarn time.Duration, limit int) ([]PlatformMember, error) {
	return collectMembers(s.pool.Query(ctx, `
		UPDATE platform_members m SET expiry_warned_at = $1::timestamptz
		FROM (SELECT id FROM platform_members
		      WHERE status = 'active'
		        AND (CASE WHEN refreshable THEN refresh_expires_at ELSE token_expires_at END) <= $1::timestamptz + $2::bigint * interval '1 millisecond'
		        AND (expiry_warned_at IS NULL OR expiry_warned_at <= $1::timestamptz - $3::bigint * interval '1 millisecond')
		      ORDER BY token_expires_at LIMIT $4 FOR UPDATE SKIP LOCKED) x
		WHERE m.id = x.id
		RETURNING `+memberCols("m."), now, window.Milliseconds(), rewarn.Milliseconds(), limit))
}

// ---- member sync jobs ----

// NewPlatformSync is a member sync job to create.
type NewPlatformSync struct {
	Tenant string
	Name   string
	// Members are enrichq member ids or platform member ids of the tenant;
	// nil with All for every member of the tenant.
	Members        []string
	All            bool
	IdempotencyKey string
	ChunkSize      int
}

// UnknownMembersError lists refs that are no member of the tenant.
type UnknownMembersError struct{ Refs []string }

func (e *UnknownMembersError) Error() string {
	return fmt.Sprintf("not connected members of this tenant: %s", strings.Join(e.Refs, ", "))
}

// ErrNoMembers: a sync of every member of a tenant that has none.
var ErrNoMembers = errors.New("no connected members")

// CreatePlatformSync stores a member sync job, one row per member (in the
// order given, duplicates once), in one transaction. With an idempotency key
// the tenant used before on a member sync (keys are scoped to their kind of
// request) it returns the first job with created=false, when the request is
// the same (name and members), else ErrIdempotencyKeyReused.
func (s *Store) CreatePlatformSync(ctx context.Context, ns NewPlatformSync) (job Job, created bool, err error) {
	if err := needTenant(ns.Tenant); err != nil {
		return Job{}, false, err
	}
	if ns.ChunkSize <= 0 {
		return Job{}, false, errors.New("store: chunk size must be positive")
	}
	var sum []byte
	if ns.IdempotencyKey != "" {
		d := newRequestDigest(scopePlatformSync)
		d.field(ns.Name)
		d.field(strconv.FormatBool(ns.All))
		for _, m := range ns.Members {
			d.field(m)
		}
		sum = d.sum()
		j, err := s.syncOfKey(ctx, ns.Tenant, ns.IdempotencyKey, sum)
		if err == nil || !errors.Is(err, ErrNotFound) {
			return j, false, err
		}
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Job{}, false, interpretError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck

	type member struct{ id, memberID, name, email string }
	var members []member
	if ns.All {
		rows, err := tx.Query(ctx, `SELECT id::text, member_id, name, email FROM platform_members WHERE tenant = $1 ORDER BY connected_at, id`, ns.Tenant)
		if err != nil {
			return Job{}, false, interpretError(err)
		}
		var m member
		if _, err := pgx.ForEachRow(rows, []any{&m.id, &m.memberID, &m.name, &m.email}, func() error {
			members = append(members, m)
			return nil
		}); err != nil {
			return Job{}, false, interpretError(err)
		}
		if len(members) == 0 {
			return Job{}, false, ErrNoMembers
		}
	} else {
		rows, err := tx.Query(ctx, `SELECT id::text, member_id, name, email FROM platform_members
			WHERE tenant = $1 AND (id::text = ANY($2) OR member_id = ANY($2))`, ns.Tenant, ns.Members)
		if err != nil {
			return Job{}, false, interpretError(err)
		}
		byRef := map[string]member{}
		var m member
		if _, err := pgx.ForEachRow(rows, []any{&m.id, &m.memberID, &m.name, &m.email}, func() error {
			byRef[m.id], byRef[m.memberID] = m, m
			return nil
		}); err != nil {
			return Job{}, false, interpretError(err)
		}
		seen := map[string]bool{}
		var unknown []string
		for _, ref := range ns.Members {
			m, ok := byRef[ref]
			switch {
			case !ok:
				unknown = append(unknown, ref)
			case !seen[m.id]:
				seen[m.id] = true
				members = append(members, m)
			}
		}
		if len(unknown) > 0 {
			return Job{}, false, &UnknownMembersError{Refs: unknown}
		}
		if len(members) == 0 {
			return Job{}, false, ErrNoMembers
		}
	}

	var idem *string
	if ns.IdempotencyKey != "" {
		idem = &ns.IdempotencyKey
	}
	chunks := (len(members) + ns.ChunkSize - 1) / ns.ChunkSize
	var jobID string
	err = tx.QueryRow(ctx, `
		INSERT INTO jobs (tenant, name, lookups, source_format, idempotency_key, idempotency_scope, request_sha256, total_rows, chunk_count, max_age_seconds)
		VALUES ($1, $2, '{profile}', 'platform', $3, CASE WHEN $3::text IS NOT NULL THEN 'platform_sync' END, $4, $5, $6, 0)
		ON CONFLICT (tenant, idempotency_scope, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING id::text`, ns.Tenant, ns.Name, idem, sum, len(members), chunks).Scan(&jobID)
	if errors.Is(err, pgx.ErrNoRows) {
		_ = tx.Rollback(ctx)
		j, err := s.syncOfKey(ctx, ns.Tenant, ns.IdempotencyKey, sum)
		return j, false, err
	}
	if err != nil {
		return Job{}, false, interpretError(err)
	}
	rows := make([][]any, len(members))
	for i, m := range members {
		rows[i] = []any{jobID, i / ns.ChunkSize, i + 1, m.memberID, domain.InputMember, nullIfEmpty(m.name), nullIfEmpty(m.email), m.id}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"job_rows"},
		[]string{"job_id", "chunk", "input_row", "ref", "input_kind", "name", "email", "platform_member"}, pgx.CopyFromRows(rows)); err != nil {
		return Job{}, false, fmt.Errorf("store: copy member rows: %w", interpretError(err))
	}
	if _, err := tx.Exec(ctx, `INSERT INTO platform_sync_chunks (job_id, chunk) SELECT $1, generate_series(0, $2 - 1)`, jobID, chunks); err != nil {
		return Job{}, false, interpretError(err)
	}
	job, err = scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, jobID))
	if err != nil {
		return Job{}, false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Job{}, false, interpretError(err)
	}
	return job, true, nil
}

// syncOfKey is the member sync of a tenant's idempotency key when it was
// asked with the request of digest sum; ErrNotFound when the key is unused.
func (s *Store) syncOfKey(ctx context.Context, tenant, key string, sum []byte) (Job, error) {
	var j Job
	var maxAge int64
	var stored []byte
	err := s.pool.QueryRow(ctx, `SELECT `+jobColumns+`, request_sha256 FROM jobs
		WHERE tenant = $1 AND idempotency_scope = $2 AND idempotency_key = $3`, tenant, scopePlatformSync, key).
		Scan(append(jobDest(&j, &maxAge), &stored)...)
	if err != nil {
		return Job{}, interpretError(err)
	}
	j.MaxAge = time.Duration(maxAge) * time.Second
	if err := sameRequest(stored, sum); err != nil {
		return Job{}, err
	}
	return j, nil
}

// IsPlatformSync reports whether a job of the tenant is a member sync job.
func (s *Store) IsPlatformSync(ctx context.Context, tenant, jobID string) (bool, error) {
	if err := needTenant(tenant); err != nil {
		return false, err
	}
	if _, err := uuid.Parse(jobID); err != nil {
		return false, nil
	}
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM platform_sync_chunks c JOIN jobs j ON j.id = c.job_id
		WHERE c.job_id = $1 AND j.tenant = $2)`, jobID, tenant).Scan(&ok)
	return ok, interpretError(err)
}

// NextAttempt returns the earliest due time of a job's retry_wait rows; nil when none waits.
func (s *Store) NextAttempt(ctx context.Context, jobID string) (*time.Time, error) {
	var t *time.Time
	err := s.pool.QueryRow(ctx, `SELECT min(r.next_attempt_at) FROM job_chunk_counts k
		JOIN job_rows r ON r.job_id = k.job_id AND r.chunk = k.chunk
		WHERE k.job_id = $1 AND k.retry_wait > 0 AND r.state = 'retry_wait'`, jobID).Scan(&t)
	return t, interpretError(err)
}

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
		WITH c AS (
			UPDATE job_rows r SET state = 'in_flight', lease_token = $3, lease_until = now() + $4 * interval '1 millisecond',
				next_attempt_at = NULL, updated_at = now()
			FROM jobs j
			WHERE j.id = r.job_id AND j.state IN ('queued', 'running')
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
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, interpretError(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	rows, err := tx.Query(ctx, `
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
		RETURNING r.id`, pgx.StrictNamedArgs{"ids": ids, "states": states, "reasons": reasons, "last_errors": lastErrors,
		"next_at": next, "inc": inc, "matched": matched, "token": token})
	if err != nil {
		return nil, interpretError(err)
	}
	written, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, interpretError(err)
	}
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
	if batch.Len() > 0 {
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return nil, fmt.Errorf("store: save platform results: %w", interpretError(err))
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, interpretError(err)
	}
	return written, nil
}

// PlatformChunksToEnqueue picks member sync chunks of queued or running jobs
// with work to do: pending rows not handed to the queue within recheck, or
// retry_wait rows due at now that became due since the chunk was last handed
// (or longer ago than recheck), and stamps them enqueued. Due times are
// compared with now (the caller's clock, which midnight UTC parking runs
// on); the dispatch stamps use the database's clock, like leases.
// Concurrent schedulers get disjoint sets (SKIP LOCKED).
func (s *Store) PlatformChunksToEnqueue(ctx context.Context, now time.Time, recheck time.Duration, limit int) ([]ChunkRef, error) {
	rows, err := s.pool.Query(ctx, `
		UPDATE platform_sync_chunks c SET enqueued_at = now()
		FROM (
			SELECT c.job_id, c.chunk FROM platform_sync_chunks c JOIN jobs j ON j.id = c.job_id
			WHERE j.state IN ('queued', 'running')
			  -- Chunks with open rows, from their counts; then their rows (job_rows_chunk).
			  AND EXISTS (SELECT 1 FROM job_chunk_counts k WHERE k.job_id = c.job_id AND k.chunk = c.chunk AND k.pending + k.retry_wait > 0)
			  AND EXISTS (SELECT 1 FROM job_rows r WHERE r.job_id = c.job_id AND r.chunk = c.chunk AND (
			        (r.state = 'pending' AND (c.enqueued_at IS NULL OR c.enqueued_at <= now() - $2::bigint * interval '1 millisecond'))
			     OR (r.state = 'retry_wait' AND r.next_attempt_at <= $1::timestamptz
			         AND (c.enqueued_at IS NULL OR c.enqueued_at <= now() - $2::bigint * interval '1 millisecond'
			              OR c.enqueued_at < r.next_attempt_at))))
			ORDER BY j.created_at, c.chunk
			LIMIT $3
			FOR UPDATE OF c SKIP LOCKED) d
		WHERE c.job_id = d.job_id AND c.chunk = d.chunk
		RETURNING c.job_id::text, c.chunk`, now, recheck.Milliseconds(), limit)
	if err != nil {
		return nil, interpretError(err)
	}
	refs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ChunkRef])
	return refs, interpretError(err)
}

// MarkPlatformChunksEnqueued stamps member sync chunks as handed to the queue now.
func (s *Store) MarkPlatformChunksEnqueued(ctx context.Context, jobID string, chunks []int) error {
	_, err := s.pool.Exec(ctx, `UPDATE platform_sync_chunks SET enqueued_at = now() WHERE job_id = $1 AND chunk = ANY($2)`, jobID, chunks)
	return interpretError(err)
}

// OpenPlatformChunks returns the chunks of member sync job jobID that have
// rows pending or waiting, from their counts (no scan of the job's rows).
func (s *Store) OpenPlatformChunks(ctx context.Context, jobID string) ([]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT c.chunk FROM platform_sync_chunks c
		JOIN job_chunk_counts k ON k.job_id = c.job_id AND k.chunk = c.chunk
		WHERE c.job_id = $1 AND k.pending + k.retry_wait > 0 ORDER BY c.chunk`, jobID)
	if err != nil {
		return nil, interpretError(err)
	}
	chunks, err := pgx.CollectRows(rows, pgx.RowTo[int])
	return chunks, interpretError(err)
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
