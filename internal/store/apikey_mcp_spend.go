package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// MCPSpendLimit names a key's MCP spend of one UTC day and its ceiling: the
// budgets the key committed through MCP that day (a job's budget at
// submit_job, the increase of a raise_budget) may not sum above Ceiling.
type MCPSpendLimit struct {
	Tenant  string
	KeyID   string
	Day     time.Time // its UTC date is the day
	Ceiling int64
}

// DailyCeilingError: committing Asked more would take the key's MCP spend
// of the day (Committed) above Ceiling; nothing was recorded.
type DailyCeilingError struct {
	Committed, Ceiling, Asked int64
}

func (e *DailyCeilingError) Error() string {
	return fmt.Sprintf("%d credits more would take today's MCP spend of %d above its ceiling of %d", e.Asked, e.Committed, e.Ceiling)
}

// Left is what the key may still commit today.
func (e *DailyCeilingError) Left() int64 { return max(0, e.Ceiling-e.Committed) }

// CommitMCPSpend records credits against the key's MCP spend of the day if
// the sum stays within the ceiling, else refuses with a *DailyCeilingError;
// it returns the day's spend after the commit. The check and the record are
// one statement holding the day's row, so two concurrent commits cannot
// both pass on the same room.
func (s *Store) CommitMCPSpend(ctx context.Context, l MCPSpendLimit, credits int64) (int64, error) {
	var committed int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		committed, err = commitMCPSpend(ctx, tx, l, credits)
		return err
	})
	return committed, err
}

func commitMCPSpend(ctx context.Context, tx pgx.Tx, l MCPSpendLimit, credits int64) (int64, error) {
	if err := needTenant(l.Tenant); err != nil {
		return 0, err
	}
	if credits < 0 {
		return 0, fmt.Errorf("store: MCP spend of %d credits", credits)
	}
	var committed int64
	if credits <= l.Ceiling {
		err := tx.QueryRow(ctx, `INSERT INTO mcp_daily_spend AS d (tenant, key_id, day, credits) VALUES ($1, $2, $3, $4)
			ON CONFLICT (tenant, key_id, day) DO UPDATE SET credits = d.credits + EXCLUDED.credits, updated_at = now()
				WHERE d.credits + EXCLUDED.credits <= $5
			RETURNING credits`, l.Tenant, l.KeyID, utcDate(l.Day), credits, l.Ceiling).Scan(&committed)
		if err == nil {
			return committed, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, interpretError(err)
		}
	}
	// No room: what the day holds, for the refusal.
	committed, err := mcpSpent(ctx, tx, l)
	if err != nil {
		return 0, err
	}
	return 0, &DailyCeilingError{Committed: committed, Ceiling: l.Ceiling, Asked: credits}
}

// ReleaseMCPSpend takes credits back from the key's MCP spend of the day:
// what CommitMCPSpend recorded for a job that was then not made (refused,
// or an idempotent replay of one made before).
func (s *Store) ReleaseMCPSpend(ctx context.Context, l MCPSpendLimit, credits int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE mcp_daily_spend SET credits = greatest(credits - $4, 0), updated_at = now()
		WHERE tenant = $1 AND key_id = $2 AND day = $3`, l.Tenant, l.KeyID, utcDate(l.Day), credits)
	return interpretError(err)
}

// MCPSpent is the key's MCP spend of the day.
func (s *Store) MCPSpent(ctx context.Context, l MCPSpendLimit) (int64, error) {
	return mcpSpent(ctx, s.pool, l)
}

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func mcpSpent(ctx context.Context, q queryRower, l MCPSpendLimit) (int64, error) {
	var committed int64
	err := q.QueryRow(ctx, `SELECT coalesce(sum(credits), 0) FROM mcp_daily_spend WHERE tenant = $1 AND key_id = $2 AND day = $3`,
		l.Tenant, l.KeyID, utcDate(l.Day)).Scan(&committed)
	return committed, interpretError(err)
}

// utcDate is t's UTC date, as Postgres takes a date.
func utcDate(t time.Time) string { return t.UTC().Format(time.DateOnly) }
