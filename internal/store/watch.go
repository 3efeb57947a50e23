package store

import (
	"context"
	"errors"
	"hash/fnv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// Watch states.
const (
	WatchActive = "active"
	WatchPaused = "paused"
)

// MinWatchEvery is the shortest period of a watch.
const MinWatchEvery = 7 * 24 * time.Hour

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
}

// WatchDayOffset is where in the day (UTC) a watch's runs fall: a hash of
// its id, so that watches made at the same moment do not all run then.
func WatchDayOffset(id string) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return time.Duration(h.Sum64()%86400) * time.Second
}

// watchSlotAfter is the first slot of a watch at or after t: its day's
// offset, on t's day or the day after.
func watchSlotAfter(t time.Time, offset time.Duration) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	if s := day.Add(offset); !s.Before(t) {
		return s
	}
	return day.AddDate(0, 0, 1).Add(offset)
}

// CreateWatch stores a watch of the distinct inputs of a finished job of
// the tenant (ErrNotFound: no such job; ErrJobNotFinished), each with the
// job's answer as its snapshot. The first run is due a period after now,
// at the watch's time of day.
func (s *Store) CreateWatch(ctx context.Context, nw NewWatch) (Watch, error) {
	if err := needTenant(nw.Tenant); err != nil {
		return Watch{}, err
	}
	id := uuid.NewString()
	offset := WatchDayOffset(id)
	next := watchSlotAfter(nw.Now.Add(nw.Every), offset)
	var w Watch
	err := s.inTx(ctx, func(tx pgx.Tx) error {
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
		return err
	})
	return w, err
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

// UpdateWatch changes a watch of the tenant. A new period moves the next
// run to a period after the last one (or after now when none ran); a
// resume of a watch whose next run is past sets it to its next slot from
// now (the slots missed while paused are not run); a raised cap lifts the
// cap's stop.
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
		next := old.NextRunAt
		offset := WatchDayOffset(old.ID)
		if p.Every != nil && *p.Every != old.Every {
			var last *time.Time
			if err := tx.QueryRow(ctx, `SELECT max(slot) FROM watch_runs WHERE watch_id = $1`, old.ID).Scan(&last); err != nil {
				return interpretError(err)
			}
			from := p.Now
			if last != nil {
				from = *last
			}
			next = watchSlotAfter(from.Add(*p.Every), offset)
		}
		if p.State != nil && *p.State == WatchActive && old.State == WatchPaused && next.Before(p.Now) {
			next = watchSlotAfter(p.Now, offset)
		}
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

// WatchInputs is the inputs of a watch of the tenant, in their order.
func (s *Store) WatchInputs(ctx context.Context, tenant, id string) ([]WatchInput, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT i.n, i.ref, i.input_kind, coalesce(i.profile_url, ''), coalesce(i.name, ''), coalesce(i.company, ''),
			coalesce(i.domain, ''), coalesce(i.email, ''), coalesce(i.role, '')
		FROM watch_inputs i JOIN watches w ON w.id = i.watch_id
		WHERE w.tenant = $1 AND w.id::text = $2 ORDER BY i.n`, tenant, id)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[WatchInput])
	return out, interpretError(err)
}
