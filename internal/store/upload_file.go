package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// UploadFile is a stored upload: a file kept for later estimates and submits
// by its id, until ExpiresAt.
type UploadFile struct {
	ID       string
	Tenant   string
	Filename string
	Format   string // csv, tsv, xlsx or json
	// Read is how Body is read again: the column mapping, encoding and sheet
	// it was first read with.
	Read UploadRead
	// Body is the file as sent; empty unless asked for (GetUploadFile).
	Body             []byte
	Size             int64 // bytes of Body
	Rows             int   // data rows that were not blank
	Lookups          int   // lookups without job roles
	RowsNeedingRoles int   // company-only rows: they look up nothing without job roles
	Columns          map[string]string
	ExtraColumns     []string
	// PersonHashes are the keyed hashes of the people its rows name, each
	// its first PersonHashBytes bytes, concatenated: what an erasure finds
	// it by (Erase). Nil: stored without an erasure key.
	PersonHashes []byte
	CreatedAt    time.Time
	ExpiresAt    time.Time
}

// PersonHashBytes is the width of one of UploadFile.PersonHashes: 16 bytes
// of an HMAC-SHA256 keep a collision beyond reach and a large upload's
// hashes a quarter of its size at most.
const PersonHashBytes = 16

// UploadRead is how a stored upload's body is read.
type UploadRead struct {
	Columns  map[string]string `json:"columns,omitempty"`
	Encoding string            `json:"encoding,omitempty"`
	Sheet    string            `json:"sheet,omitempty"`
}

// UploadQuota caps a tenant's live uploads. Zero fields cap nothing.
type UploadQuota struct {
	MaxUploads int   // live uploads
	MaxBytes   int64 // their bytes, summed
}

// UploadQuotaError: storing the upload would take the tenant past its
// quota; nothing was stored.
type UploadQuotaError struct {
	Quota          UploadQuota
	Uploads        int   // live uploads before this one
	Bytes          int64 // their bytes
	Size           int64 // this upload's bytes
	TooManyUploads bool  // the count is the cap hit, else the bytes
}

func (e *UploadQuotaError) Error() string {
	if e.TooManyUploads {
		return fmt.Sprintf("the tenant has %d live uploads; the limit is %d", e.Uploads, e.Quota.MaxUploads)
	}
	return fmt.Sprintf("the tenant's live uploads hold %d bytes and this one %d; the limit is %d in all",
		e.Bytes, e.Size, e.Quota.MaxBytes)
}

const uploadColumns = `id::text, tenant, filename, format, read_options, size_bytes, rows_uploaded, lookups,
	rows_needing_roles, column_map, extra_columns, created_at, expires_at`

func uploadDest(u *UploadFile) []any {
	return []any{&u.ID, &u.Tenant, &u.Filename, &u.Format, &u.Read, &u.Size, &u.Rows, &u.Lookups,
		&u.RowsNeedingRoles, &u.Columns, &u.ExtraColumns, &u.CreatedAt, &u.ExpiresAt}
}

// CreateUploadFile stores u for its tenant, created at now, if the tenant's
// live uploads (those not expired at now) stay within q with it; else an
// *UploadQuotaError. Uploads of one tenant are stored one at a time, so
// two at once cannot both slip under the cap.
func (s *Store) CreateUploadFile(ctx context.Context, u UploadFile, now time.Time, q UploadQuota) (UploadFile, error) {
	if err := needTenant(u.Tenant); err != nil {
		return UploadFile{}, err
	}
	if u.Columns == nil {
		u.Columns = map[string]string{}
	}
	if u.ExtraColumns == nil {
		u.ExtraColumns = []string{}
	}
	u.Size = int64(len(u.Body))
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return UploadFile{}, interpretError(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('uploads:' || $1, 0))`, u.Tenant); err != nil {
		return UploadFile{}, interpretError(err)
	}
	var n int
	var bytes int64
	if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(sum(size_bytes), 0)::bigint FROM uploads
		WHERE tenant = $1 AND expires_at > $2`, u.Tenant, now).Scan(&n, &bytes); err != nil {
		return UploadFile{}, interpretError(err)
	}
	qe := &UploadQuotaError{Quota: q, Uploads: n, Bytes: bytes, Size: u.Size}
	switch {
	case q.MaxUploads > 0 && n+1 > q.MaxUploads:
		qe.TooManyUploads = true
		return UploadFile{}, qe
	case q.MaxBytes > 0 && bytes+u.Size > q.MaxBytes:
		return UploadFile{}, qe
	}
	err = tx.QueryRow(ctx, `INSERT INTO uploads (tenant, filename, format, read_options, body, size_bytes, rows_uploaded,
			lookups, rows_needing_roles, column_map, extra_columns, person_hashes, created_at, expires_at)
		VALUES (@tenant, @filename, @format, @read, @body, @size, @rows, @lookups, @needRoles, @columns, @extra, @people, @created, @expires)
		RETURNING id::text`,
		pgx.NamedArgs{"tenant": u.Tenant, "filename": u.Filename, "format": u.Format, "read": u.Read, "body": u.Body,
			"size": u.Size, "rows": u.Rows, "lookups": u.Lookups, "needRoles": u.RowsNeedingRoles, "columns": u.Columns,
			"extra": u.ExtraColumns, "people": u.PersonHashes, "created": now, "expires": u.ExpiresAt}).Scan(&u.ID)
	if err != nil {
		return UploadFile{}, interpretError(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return UploadFile{}, interpretError(err)
	}
	u.CreatedAt = now
	return u, nil
}

// GetUploadFile returns the tenant's upload id if it has not expired at
// now, with its Body when withBody; ErrNotFound otherwise (another tenant's
// upload too).
func (s *Store) GetUploadFile(ctx context.Context, tenant, id string, now time.Time, withBody bool) (UploadFile, error) {
	if err := needTenant(tenant); err != nil {
		return UploadFile{}, err
	}
	if _, err := uuid.Parse(id); err != nil {
		return UploadFile{}, ErrNotFound
	}
	var u UploadFile
	dest := uploadDest(&u)
	body := `''::bytea`
	if withBody {
		body = `body`
	}
	dest = append(dest, &u.Body)
	err := s.pool.QueryRow(ctx, `SELECT `+uploadColumns+`, `+body+` FROM uploads
		WHERE id = $1 AND tenant = $2 AND expires_at > $3`, id, tenant, now).Scan(dest...)
	if err != nil {
		return UploadFile{}, interpretError(err)
	}
	if !withBody {
		u.Body = nil
	}
	return u, nil
}

// DeleteUploadFile removes the tenant's upload id, expired or not;
// ErrNotFound when it has none of that id.
func (s *Store) DeleteUploadFile(ctx context.Context, tenant, id string) error {
	if err := needTenant(tenant); err != nil {
		return err
	}
	if _, err := uuid.Parse(id); err != nil {
		return ErrNotFound
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM uploads WHERE id = $1 AND tenant = $2`, id, tenant)
	if err != nil {
		return interpretError(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// DeleteExpiredUploads deletes up to batch uploads of every tenant expired
// at now, oldest expiry first, and returns how many it deleted. Small
// batches keep each statement short: an upload may hold tens of MB.
func (s *Store) DeleteExpiredUploads(ctx context.Context, now time.Time, batch int) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM uploads WHERE id IN (
			SELECT id FROM uploads WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, now, batch)
	if err != nil {
		return 0, interpretError(err)
	}
	return int(tag.RowsAffected()), nil
}
