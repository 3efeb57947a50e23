package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// WatchChange is one change line: what changed for one input of a watch,
// found by one run.
type WatchChange struct {
	ID     int64
	Ref    string
	Field  string // company, role, email, phones, location; match for a person not found any more
	Old    *string
	New    *string
	Kind   string // changed, left, not_found_any_more
	Vendor string
	JobID  string
	At     time.Time
}

// ListWatchChanges is a watch's change lines after the line afterID (0:
// from the first), oldest first, up to limit (ErrNotFound: no such watch
// of the tenant).
func (s *Store) ListWatchChanges(ctx context.Context, tenant, watchID string, afterID int64, limit int) ([]WatchChange, error) {
	if _, err := s.GetWatch(ctx, tenant, watchID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, ref, field, old, new, kind, vendor, job_id::text, at FROM watch_changes
		WHERE tenant = $1 AND watch_id::text = $2 AND id > $3 ORDER BY id LIMIT $4`, tenant, watchID, afterID, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[WatchChange])
	if out == nil {
		out = []WatchChange{}
	}
	return out, interpretError(err)
}

// JobCompanyChanges is the company changes a run's job found, for its
// person.changed webhook.
func (s *Store) JobCompanyChanges(ctx context.Context, jobID string) (watchID string, changes []WatchChange, err error) {
	rows, err := s.pool.Query(ctx, `
		SELECT watch_id::text, id, ref, field, old, new, kind, vendor, job_id::text, at FROM watch_changes
		WHERE job_id::text = $1 AND field = 'company' ORDER BY id`, jobID)
	if err != nil {
		return "", nil, interpretError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var c WatchChange
		if err := rows.Scan(&watchID, &c.ID, &c.Ref, &c.Field, &c.Old, &c.New, &c.Kind, &c.Vendor, &c.JobID, &c.At); err != nil {
			return "", nil, interpretError(err)
		}
		changes = append(changes, c)
	}
	return watchID, changes, interpretError(rows.Err())
}
