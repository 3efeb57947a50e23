package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

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
		sum = ns.digest()
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

	members, err := syncMembers(ctx, tx, ns)
	if err != nil {
		return Job{}, false, err
	}
	chunks := (len(members) + ns.ChunkSize - 1) / ns.ChunkSize
	jobID, err := insertSyncJob(ctx, tx, ns, sum, len(members), chunks)
	if errors.Is(err, pgx.ErrNoRows) {
		_ = tx.Rollback(ctx)
		j, err := s.syncOfKey(ctx, ns.Tenant, ns.IdempotencyKey, sum)
		return j, false, err
	}
	if err != nil {
		return Job{}, false, interpretError(err)
	}
	if err := addSyncRows(ctx, tx, jobID, ns.ChunkSize, chunks, members); err != nil {
		return Job{}, false, err
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

// digest is the request digest of the sync kept beside its idempotency key.
func (ns NewPlatformSync) digest() []byte {
	d := newRequestDigest(scopePlatformSync)
	d.field(ns.Name)
	d.field(strconv.FormatBool(ns.All))
	for _, m := range ns.Members {
		d.field(m)
	}
	return d.sum()
}

// syncMember is a member of the tenant as a sync row names it.
type syncMember struct{ id, memberID, name, email string }

// syncMembers reads the members a sync names: every member of the tenant in
// the order they connected (All), else those of ns.Members in the order
// given, duplicates once; an *UnknownMembersError for refs that are no
// member of the tenant, ErrNoMembers for none.
func syncMembers(ctx context.Context, tx pgx.Tx, ns NewPlatformSync) ([]syncMember, error) {
	var members []syncMember
	if ns.All {
		rows, err := tx.Query(ctx, `SELECT id::text, member_id, name, email FROM platform_members WHERE tenant = $1 ORDER BY connected_at, id`, ns.Tenant)
		if err != nil {
			return nil, interpretError(err)
		}
		var m syncMember
		if _, err := pgx.ForEachRow(rows, []any{&m.id, &m.memberID, &m.name, &m.email}, func() error {
			members = append(members, m)
			return nil
		}); err != nil {
			return nil, interpretError(err)
		}
		if len(members) == 0 {
			return nil, ErrNoMembers
		}
		return members, nil
	}
	rows, err := tx.Query(ctx, `SELECT id::text, member_id, name, email FROM platform_members
		WHERE tenant = $1 AND (id::text = ANY($2) OR member_id = ANY($2))`, ns.Tenant, ns.Members)
	if err != nil {
		return nil, interpretError(err)
	}
	byRef := map[string]syncMember{}
	var m syncMember
	if _, err := pgx.ForEachRow(rows, []any{&m.id, &m.memberID, &m.name, &m.email}, func() error {
		byRef[m.id], byRef[m.memberID] = m, m
		return nil
	}); err != nil {
		return nil, interpretError(err)
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
		return nil, &UnknownMembersError{Refs: unknown}
	}
	if len(members) == 0 {
		return nil, ErrNoMembers
	}
	return members, nil
}

// insertSyncJob inserts the sync's job and returns its id; pgx.ErrNoRows
// when the tenant used its idempotency key on a member sync before.
func insertSyncJob(ctx context.Context, tx pgx.Tx, ns NewPlatformSync, sum []byte, rows, chunks int) (string, error) {
	var idem *string
	if ns.IdempotencyKey != "" {
		idem = &ns.IdempotencyKey
	}
	var jobID string
	err := tx.QueryRow(ctx, `
		INSERT INTO jobs (tenant, name, lookups, source_format, idempotency_key, idempotency_scope, request_sha256, total_rows, chunk_count, max_age_seconds)
		VALUES ($1, $2, '{profile}', 'platform', $3, CASE WHEN $3::text IS NOT NULL THEN 'platform_sync' END, $4, $5, $6, 0)
		ON CONFLICT (tenant, idempotency_scope, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING id::text`, ns.Tenant, ns.Name, idem, sum, rows, chunks).Scan(&jobID)
	return jobID, err
}

// addSyncRows stores the sync's rows, one per member, and its chunks.
func addSyncRows(ctx context.Context, tx pgx.Tx, jobID string, chunkSize, chunks int, members []syncMember) error {
	rows := make([][]any, len(members))
	for i, m := range members {
		rows[i] = []any{jobID, i / chunkSize, i + 1, m.memberID, domain.InputMember, nullIfEmpty(m.name), nullIfEmpty(m.email), m.id}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"job_rows"},
		[]string{"job_id", "chunk", "input_row", "ref", "input_kind", "name", "email", "platform_member"}, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("store: copy member rows: %w", interpretError(err))
	}
	if _, err := tx.Exec(ctx, `INSERT INTO platform_sync_chunks (job_id, chunk) SELECT $1, generate_series(0, $2 - 1)`, jobID, chunks); err != nil {
		return interpretError(err)
	}
	return nil
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
