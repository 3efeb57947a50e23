package service

import (
	"fmt"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/store"
)

// The service's sentinels are the store's: an error from Postgres needs no
// translation on its way out.
var (
	// ErrNotFound: no such job, or not the tenant's.
	ErrNotFound = store.ErrNotFound
	// ErrConflict: the request conflicts with the job's current state.
	ErrConflict = store.ErrConflict
	// ErrUnavailable: Postgres is out of reach; nothing was done, and the
	// same call may work a few seconds later.
	ErrUnavailable = store.ErrUnavailable
	// ErrNoTenant: the principal has no tenant; nothing is read or made.
	ErrNoTenant = store.ErrNoTenant
	// ErrInvalidInput: a value Postgres cannot store as text (U+0000)
	// slipped past the checks of the door; nothing was stored.
	ErrInvalidInput = store.ErrInvalidInput
)

// ForbiddenError: the key lacks the scope the operation needs.
type ForbiddenError struct {
	Need domain.Scope
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("this API key lacks the %q scope this operation needs", e.Need)
}

// Codes of InvalidError.
const (
	// CodeInvalidParameter: a parameter of the call (limit, cursor, state,
	// since) is wrong; Details names it.
	CodeInvalidParameter = "invalid_parameter"
	// CodeInvalidIdempotencyKey: the idempotency key is not one the service takes.
	CodeInvalidIdempotencyKey = "invalid_idempotency_key"
	// CodeIdempotencyKeyReused: the idempotency key was used before with
	// another request (other rows or options); nothing was stored.
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	// CodeInvalidOptions: a job option (a budget) is wrong.
	CodeInvalidOptions = ingest.CodeInvalidOptions
)

// InvalidError: a value of the call is wrong; nothing was done.
type InvalidError struct {
	Code    string // one of the Code* constants above
	Message string
	Details []ingest.FieldError
}

func (e *InvalidError) Error() string { return e.Code + ": " + e.Message }

// invalidParam is an InvalidError naming the parameter that is wrong.
func invalidParam(param, format string, args ...any) *InvalidError {
	msg := fmt.Sprintf(format, args...)
	return &InvalidError{Code: CodeInvalidParameter, Message: msg, Details: []ingest.FieldError{{Column: param, Message: msg}}}
}

// ConflictError: the job's state forbids the operation; Code and Message say
// why. It is an ErrConflict.
type ConflictError struct {
	Code    string
	Message string
}

func (e *ConflictError) Error() string { return e.Code + ": " + e.Message }
func (e *ConflictError) Unwrap() error { return ErrConflict }
