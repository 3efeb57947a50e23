package service

import (
	"errors"
	"fmt"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/store"
)

// The service's sentinels carry the store's values, so that an error from
// Postgres needs no translation on its way out; a door names them by the
// service alone.
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
	// ErrIdempotencyKeyReused: a member sync's idempotency key was used
	// before with another request (a job's comes as an *InvalidError).
	ErrIdempotencyKeyReused = store.ErrIdempotencyKeyReused
)

// NotFoundError is an ErrNotFound that names what was not found: a job, an
// upload, an erasure, a member, a member sync job. A door says "no such "
// and the Noun.
type NotFoundError struct {
	Noun string
	Hint string // why it may be gone, when there is more to say: "it may have expired"
}

func (e *NotFoundError) Error() string {
	if e.Hint != "" {
		return e.Noun + " not found (" + e.Hint + ")"
	}
	return e.Noun + " not found"
}

func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// notFound names noun in err when err is the store's ErrNotFound; any other
// err as it is.
func notFound(noun string, err error) error {
	if errors.Is(err, ErrNotFound) {
		var nf *NotFoundError
		if errors.As(err, &nf) {
			return err
		}
		return &NotFoundError{Noun: noun}
	}
	return err
}

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
