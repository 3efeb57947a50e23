package store

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Sentinel errors callers map to their own boundaries (HTTP statuses, task outcomes).
var (
	// ErrNotFound: no such record (or not visible to this tenant).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a uniqueness rule was hit.
	ErrConflict = errors.New("conflict")
	// ErrBudgetExhausted: a credit reservation does not fit in the budget.
	ErrBudgetExhausted = errors.New("credit budget exhausted")
)

// interpretError maps pgx errors to the package's sentinels, once, here.
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w: %s", ErrConflict, pgErr.ConstraintName)
		}
	}
	return err
}
