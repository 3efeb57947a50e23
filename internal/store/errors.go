package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

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
	// ErrUnavailable: Postgres cannot be reached or is shutting down or
	// starting (a restart, a failover, no free connection slot). The same
	// request may succeed a few seconds later.
	ErrUnavailable = errors.New("database unavailable")
	// ErrNoTenant: a tenant's operation was asked for with an empty tenant.
	// It is refused, never read as "every tenant" (internal callers that
	// work across tenants have methods of their own, such as JobByID).
	ErrNoTenant = errors.New("no tenant given")
	// ErrInvalidInput: Postgres refused a value as text (U+0000, which no
	// text column can hold, or bytes not in the database's encoding). Callers
	// check their input before; this is the backstop that keeps such a value
	// a client's error instead of an internal one.
	ErrInvalidInput = errors.New("invalid input: a value Postgres cannot store as text")
)

// needTenant refuses an empty tenant.
func needTenant(tenant string) error {
	if tenant == "" {
		return ErrNoTenant
	}
	return nil
}

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
		case "22021", "22P05": // character_not_in_repertoire (U+0000), untranslatable_character
			return fmt.Errorf("%w: %s", ErrInvalidInput, pgErr.Message)
		}
	}
	if isUnavailable(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// isUnavailable tells a database that is unreachable, restarting or out
// of connection slots from a query that failed on its own merits.
func isUnavailable(err error) bool {
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"): // connection_exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // admin/crash shutdown, cannot connect now
			return true
		case pgErr.Code == "53300": // too_many_connections
			return true
		}
		return false
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // the caller's own deadline (context.DeadlineExceeded is a net.Error too)
	}
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || pgconn.SafeToRetry(err)
}

// Conflicts is how many transactions of this Store Postgres rolled back to
// break a deadlock or a serialization conflict (each was run again).
func (s *Store) Conflicts() int64 { return s.conflicts.Load() }

// isConflict is a transaction Postgres rolled back to break a deadlock or
// a serialization conflict: running it again is safe and usually succeeds.
func isConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}
