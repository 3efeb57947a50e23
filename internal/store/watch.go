package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/watches"
)

// Watch states (the rules are internal/watches').
const (
	WatchActive = watches.Active
	WatchPaused = watches.Paused
)

// ErrJobNotFinished: a watch is made from a finished job only.
var ErrJobNotFinished = errors.New("the job has not finished")

// Watch is a list kept fresh: the distinct inputs of a finished job
// enriched again every period under a monthly cap (docs/watches.md).
type Watch struct {
	ID                string
	Tenant            string
	SourceJob         string
	Lookups           []domain.Stage
	Every             time.Duration
	MonthlyCapCredits int64
	State             string
	NextRunAt         time.Time
	// CapReachedMonth is the month (its first day, UTC) whose cap stopped a
	// run; nil: none.
	CapReachedMonth *time.Time
	CallbackURL     string
	Inputs          int
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

const watchColumns = `w.id::text, w.tenant, w.source_job::text, w.lookups, w.every_seconds, w.monthly_cap_credits, w.state,
	w.next_run_at, w.cap_reached_month, coalesce(w.callback_url, ''),
	(SELECT count(*) FROM watch_inputs i WHERE i.watch_id = w.id)::int, w.created_at, w.updated_at`

func scanWatch(row pgx.Row) (Watch, error) {
	var w Watch
	var every int64
	var capMonth *time.Time
	err := row.Scan(&w.ID, &w.Tenant, &w.SourceJob, &w.Lookups, &every, &w.MonthlyCapCredits, &w.State,
		&w.NextRunAt, &capMonth, &w.CallbackURL, &w.Inputs, &w.CreatedAt, &w.UpdatedAt)
	if err != nil {
		return Watch{}, interpretError(err)
	}
	w.Every = time.Duration(every) * time.Second
	if capMonth != nil {
		m := time.Date(capMonth.Year(), capMonth.Month(), capMonth.Day(), 0, 0, 0, 0, time.UTC)
		w.CapReachedMonth = &m
	}
	return w, nil
}

// NewWatch is what CreateWatch stores.
type NewWatch struct {
	Tenant            string
	SourceJob         string
	Lookups           []domain.Stage // nil: the source job's
	Every             time.Duration
	MonthlyCapCredits int64
	CallbackURL       string
	Now               time.Time
	// KeyID is the API key that makes it, for its audit line (written in
	// the same transaction).
	KeyID string
	// Admit, when set, is asked under the tenant's lock (two creations of
	// one tenant take turns) whether the watch may be made: an error
	// refuses it, nothing stored.
	Admit func(watches.CreateFacts) error
}

// CreateWatch stores a watch of the distinct inputs of a finished job of
// the tenant (ErrNotFound: no such job; ErrJobNotFinished), each with the
// job's answer as its snapshot, copied inside Postgres (INSERT … SELECT:
// the inputs never pass through the caller), and its audit line. The first
// run is due a period after now, at the watch's time of day.
func (s *Store) CreateWatch(ctx context.Context, nw NewWatch) (Watch, error) {
	if err := needTenant(nw.Tenant); err != nil {
		return Watch{}, err
	}
	id := uuid.NewString()
	offset := watches.DayOffset(id)
	next := watches.FirstRun(id, nw.Every, nw.Now)
	var w Watch
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if nw.Admit != nil {
			if err := admitWatch(ctx, tx, nw); err != nil {
				return err
			}
		}
		var state domain.JobState
		var lookups []domain.Stage
		var finished *time.Time
		err := tx.QueryRow(ctx, `SELECT state, lookups, finished_at FROM jobs WHERE tenant = $1 AND id::text = $2 AND source_format <> 'platform'`,
			nw.Tenant, nw.SourceJob).Scan(&state, &lookups, &finished)
		if err != nil {
			return interpretError(err)
		}
		if finished == nil {
			return ErrJobNotFinished
		}
		if nw.Lookups == nil {
			nw.Lookups = lookups
		}
		if _, err := exec(ctx, tx, `
			INSERT INTO watches (id, tenant, source_job, lookups, every_seconds, monthly_cap_credits, day_offset_seconds, next_run_at, callback_url, created_at, updated_at)
			VALUES (@id, @tenant, @job, @lookups, @every, @cap, @offset, @next, @callback, @now, @now)`,
			pgx.StrictNamedArgs{"id": id, "tenant": nw.Tenant, "job": nw.SourceJob, "lookups": nw.Lookups,
				"every": int64(nw.Every / time.Second), "cap": nw.MonthlyCapCredits, "offset": int(offset / time.Second),
				"next": next, "callback": nullIfEmpty(nw.CallbackURL), "now": nw.Now}); err != nil {
			return err
		}
		if _, err := exec(ctx, tx, watchInputsSQL, id, nw.SourceJob); err != nil {
			return err
		}
		w, err = scanWatch(tx.QueryRow(ctx, `SELECT `+watchColumns+` FROM watches w WHERE w.id = $1`, id))
		if err != nil {
			return err
		}
		return appendAudit(ctx, tx, AuditLine{Tenant: nw.Tenant, KeyID: nw.KeyID, Action: AuditWatchCreated, Subject: id, Rows: int64(w.Inputs)})
	})
	return w, err
}

// admitWatch takes the tenant's watch lock (held to the commit) and asks
// nw.Admit with the tenant's watches and the creations of the last
// watches.CreateWindow, counted from the audit log (deleted watches stay
// counted there).
func admitWatch(ctx context.Context, tx pgx.Tx, nw NewWatch) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('enrichq.watches:' || $1, 0))`, nw.Tenant); err != nil {
		return interpretError(err)
	}
	f := watches.CreateFacts{Now: nw.Now}
	var oldest *time.Time
	var dbNow time.Time
	err := tx.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM watches WHERE tenant = $1)::int, count(*)::int, min(at), now()
		FROM audit_log WHERE tenant = $1 AND action = $2 AND at > now() - $3::interval`,
		nw.Tenant, AuditWatchCreated, watches.CreateWindow).Scan(&f.Watches, &f.Created, &oldest, &dbNow)
	if err != nil {
		return interpretError(err)
	}
	if oldest != nil {
		// The audit log's clock is the database's: the wait is measured on it.
		f.Oldest, f.Now = *oldest, dbNow
	}
	return nw.Admit(f)
}

// watchInputsSQL copies the distinct inputs of a job ($2) into a watch
// ($1), each with the job's answer: inputs compare as the cache's keys do
// (case and blanks aside); a row without an input (an erased person's,
// stored blank) is not taken, a row a cancel skipped is.
const watchInputsSQL = `
	INSERT INTO watch_inputs (watch_id, n, ref, input_kind, profile_url, name, company, domain, email, role,
		matched, found_profile_url, snap_company, snap_role, snap_email, snap_phones, snap_location, answered_at)
	SELECT $1, row_number() OVER (ORDER BY d.input_row, d.id), d.ref, d.input_kind, d.profile_url, d.name, d.company, d.domain, d.email, d.role,
		d.matched, d.found_profile_url, d.company_found, d.role_found, d.email_found, d.phones_found, d.location_found, d.finished_at
	` + watchInputsFrom

// watchInputsFrom is the distinct inputs of a job ($2) as d, in the order
// a watch numbers them: what watchInputsSQL copies and JobWatchInputs reads.
const watchInputsFrom = `FROM (
		SELECT DISTINCT ON (r.input_kind, lower(btrim(coalesce(r.profile_url, ''), '/ ')), lower(btrim(coalesce(r.email, ''))),
				lower(btrim(coalesce(r.name, ''))), lower(btrim(coalesce(r.company, ''))), lower(coalesce(r.domain, '')))
			r.id, r.input_row, r.ref, r.input_kind, r.profile_url, r.name, r.company, r.domain, r.email, r.role,
			CASE WHEN r.state IN ('matched', 'no_match') THEN r.state = 'matched' END AS matched,
			r.found_profile_url, p.company AS company_found, p.role AS role_found, e.email AS email_found,
			(SELECT string_agg(x->>'number', ',' ORDER BY x->>'number') FROM jsonb_array_elements(ph.phones) x) AS phones_found,
			p.location AS location_found, r.finished_at
		FROM job_rows r
		LEFT JOIN profile_results p ON p.row_id = r.id
		LEFT JOIN email_results e ON e.row_id = r.id
		LEFT JOIN phone_results ph ON ph.row_id = r.id
		WHERE r.job_id = $2::uuid AND r.input_kind <> 'member' AND num_nonnulls(r.profile_url, r.name, r.company, r.domain, r.email) > 0
		ORDER BY r.input_kind, lower(btrim(coalesce(r.profile_url, ''), '/ ')), lower(btrim(coalesce(r.email, ''))),
			lower(btrim(coalesce(r.name, ''))), lower(btrim(coalesce(r.company, ''))), lower(coalesce(r.domain, '')), r.input_row, r.id
	) d`

// GetWatch is a watch of the tenant (ErrNotFound).
func (s *Store) GetWatch(ctx context.Context, tenant, id string) (Watch, error) {
	if err := needTenant(tenant); err != nil {
		return Watch{}, err
	}
	return scanWatch(s.pool.QueryRow(ctx, `SELECT `+watchColumns+` FROM watches w WHERE w.tenant = $1 AND w.id::text = $2`, tenant, id))
}

// WatchCursor is where a page of ListWatches ends.
type WatchCursor struct {
	CreatedAt time.Time
	ID        string
}

// ListWatches is the tenant's watches, newest first, after the cursor.
func (s *Store) ListWatches(ctx context.Context, tenant string, after *WatchCursor, limit int) ([]Watch, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	q := `SELECT ` + watchColumns + ` FROM watches w WHERE w.tenant = $1`
	args := []any{tenant, limit}
	if after != nil {
		q += ` AND (w.created_at, w.id) < ($3, $4::uuid)`
		args = append(args, after.CreatedAt, after.ID)
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY w.created_at DESC, w.id DESC LIMIT $2`, args...)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := []Watch{}
	for rows.Next() {
		w, err := scanWatch(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, interpretError(rows.Err())
}

// WatchPatch is what UpdateWatch changes; nil fields are kept.
type WatchPatch struct {
	State             *string
	Every             *time.Duration
	MonthlyCapCredits *int64
	Now               time.Time
}

// UpdateWatch changes a watch of the tenant: its next run as
// watches.NextAfterPatch says; a raised cap lifts the cap's stop.
func (s *Store) UpdateWatch(ctx context.Context, tenant, id string, p WatchPatch) (Watch, error) {
	if err := needTenant(tenant); err != nil {
		return Watch{}, err
	}
	var w Watch
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		old, err := scanWatch(tx.QueryRow(ctx, `SELECT `+watchColumns+` FROM watches w WHERE w.tenant = $1 AND w.id::text = $2 FOR UPDATE`, tenant, id))
		if err != nil {
			return err
		}
		patch := watches.Patch{Next: old.NextRunAt, Every: p.Every, OldEvery: old.Every, Now: p.Now,
			Resumed: p.State != nil && *p.State == WatchActive && old.State == WatchPaused}
		if watches.PeriodChanged(p.Every, old.Every) {
			if err := tx.QueryRow(ctx, `SELECT max(slot) FROM watch_runs WHERE watch_id = $1`, old.ID).Scan(&patch.LastSlot); err != nil {
				return interpretError(err)
			}
		}
		next := watches.NextAfterPatch(old.ID, patch)
		clearCap := p.MonthlyCapCredits != nil && *p.MonthlyCapCredits > old.MonthlyCapCredits
		w, err = scanWatch(tx.QueryRow(ctx, `
			UPDATE watches w SET state = coalesce(@state, state), every_seconds = coalesce(@every, every_seconds),
				monthly_cap_credits = coalesce(@cap, monthly_cap_credits), next_run_at = @next,
				cap_reached_month = CASE WHEN @clear THEN NULL ELSE cap_reached_month END, updated_at = @now
			WHERE w.id = @id
			RETURNING `+watchColumns,
			pgx.StrictNamedArgs{"state": p.State, "every": durationSeconds(p.Every), "cap": p.MonthlyCapCredits, "next": next,
				"clear": clearCap, "now": p.Now, "id": old.ID}))
		return err
	})
	return w, err
}

func durationSeconds(d *time.Duration) *int64 {
	if d == nil {
		return nil
	}
	n := int64(*d / time.Second)
	return &n
}

// DeleteWatch removes a watch of the tenant with its inputs, runs and
// change lines; its runs' jobs stay (what they spent stays on record).
func (s *Store) DeleteWatch(ctx context.Context, tenant, id string) error {
	if err := needTenant(tenant); err != nil {
		return err
	}
	n, err := s.execPool(ctx, `DELETE FROM watches WHERE tenant = $1 AND id::text = $2`, tenant, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// WatchInput is one input of a watch, for an estimate.
type WatchInput struct {
	N          int
	Ref        string
	Kind       domain.InputKind
	ProfileURL string
	Name       string
	Company    string
	Domain     string
	Email      string
	Role       string
}

// WatchInputClass is a count of a watch's inputs an estimate prices alike:
// of one kind, with a role title for a name or not, with a profile URL
// given or not.
type WatchInputClass struct {
	Kind   domain.InputKind
	Role   bool // the name is the role title (only a vendor with role search answers it)
	URL    bool // a profile URL is given
	Inputs int
}

// WatchInputClasses is a watch of the tenant's inputs counted by class,
// inside Postgres: a few rows whatever the watch's size (none when the
// watch is not the tenant's).
func (s *Store) WatchInputClasses(ctx context.Context, tenant, id string) ([]WatchInputClass, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT i.input_kind, coalesce(i.role, '') <> '' AND lower(btrim(coalesce(i.name, ''))) = lower(btrim(i.role)),
			coalesce(i.profile_url, '') <> '', count(*)::int
		FROM watch_inputs i JOIN watches w ON w.id = i.watch_id
		WHERE w.tenant = $1 AND w.id::text = $2 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`, tenant, id)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[WatchInputClass])
	return out, interpretError(err)
}
