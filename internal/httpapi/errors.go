package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/service"
)

// apiError is an error with its answer: status, code and message for the
// client. Handlers return it for problems they name themselves.
type apiError struct {
	Status  int
	Code    string
	Message string
	Details []ingest.FieldError
	header  http.Header // extra response headers
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// badParam is a 400 naming the query parameter that is wrong.
func badParam(param, format string, args ...any) *apiError {
	msg := fmt.Sprintf(format, args...)
	return &apiError{Status: http.StatusBadRequest, Code: "invalid_parameter", Message: msg,
		Details: []ingest.FieldError{{Column: param, Message: msg}}}
}

func errUnauthorized(msg string) *apiError {
	return &apiError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: msg,
		header: http.Header{"Www-Authenticate": {`Bearer realm="enrichq"`}}}
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error errorJSON `json:"error"`
}

type errorJSON struct {
	Code    string              `json:"code"`
	Message string              `json:"message"`
	Details []ingest.FieldError `json:"details,omitempty"`
}

// writeError answers err. It is the one place errors become statuses:
// *apiError as it says; *ingest.Error with its own status and details; the
// service's errors: *service.ForbiddenError 403 insufficient_scope,
// service.ErrNoTenant 403 no_tenant, *service.InvalidError 400 (422 for
// invalid_options and idempotency_key_reused, as service.ErrIdempotencyKeyReused),
// *service.ConflictError 409 with its code, *service.TooManyUploadsError and
// *service.TooManyRequestsError 429 with Retry-After, ErrNotFound 404 (no such job, or what its
// *service.NotFoundError names), ErrConflict 409, ErrUnavailable 503,
// ErrInvalidInput 400; an upload over the byte
// limit 413; an upload that stopped sending 408; a server-side deadline 503;
// anything else 500, with the detail logged and never sent.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := s.classify(r, err)
	for k, v := range ae.header {
		w.Header()[k] = v
	}
	if info := infoFrom(r.Context()); info != nil {
		info.errCode = ae.Code
	}
	writeJSON(w, ae.Status, errorBody{Error: errorJSON{Code: ae.Code, Message: ae.Message, Details: ae.Details}})
}

func (s *server) classify(r *http.Request, err error) *apiError {
	var (
		ae        *apiError
		be        *bodyError
		ie        *ingest.Error
		forbidden *service.ForbiddenError
		invalid   *service.InvalidError
		conflict  *service.ConflictError
		uploads   *service.TooManyUploadsError
		throttled *service.TooManyRequestsError
		missing   *service.NotFoundError
		tooLarge  *http.MaxBytesError
		netErr    net.Error
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &ie):
		return &apiError{Status: ie.HTTPStatus(), Code: ie.Code, Message: ie.Message, Details: ie.Details}
	case errors.As(err, &forbidden):
		return errorf(http.StatusForbidden, "insufficient_scope", "%s", forbidden.Error())
	case errors.Is(err, service.ErrNoTenant):
		// A key store that gave a key no tenant: fail closed, show nothing.
		s.Log.ErrorContext(r.Context(), "an API key without a tenant", "method", r.Method, "path", r.URL.Path)
		return errorf(http.StatusForbidden, "no_tenant", "this API key belongs to no tenant")
	case errors.As(err, &invalid):
		status := http.StatusBadRequest
		if invalid.Code == service.CodeInvalidOptions || invalid.Code == service.CodeIdempotencyKeyReused {
			status = http.StatusUnprocessableEntity
		}
		return &apiError{Status: status, Code: invalid.Code, Message: invalid.Message, Details: invalid.Details}
	case errors.As(err, &conflict):
		return errorf(http.StatusConflict, conflict.Code, "%s", conflict.Message)
	case errors.As(err, &uploads):
		return &apiError{Status: http.StatusTooManyRequests, Code: "too_many_uploads", Message: uploads.Message,
			header: http.Header{"Retry-After": {strconv.Itoa(int(uploads.RetryAfter.Round(time.Second) / time.Second))}}}
	case errors.As(err, &throttled):
		return &apiError{Status: http.StatusTooManyRequests, Code: throttled.Code, Message: throttled.Message,
			header: http.Header{"Retry-After": {strconv.Itoa(int(max(time.Second, throttled.RetryAfter.Round(time.Second)) / time.Second))}}}
	case errors.As(err, &be):
		// Reading the request body failed: too much of it, too slow, or cut off.
		switch {
		case errors.As(be.err, &tooLarge):
			return errorf(http.StatusRequestEntityTooLarge, ingest.CodeTooLarge, "the request body is larger than %d bytes", tooLarge.Limit)
		case errors.As(be.err, &netErr) && netErr.Timeout():
			return &apiError{Status: http.StatusRequestTimeout, Code: "request_timeout",
				Message: "the request body did not arrive in time", header: http.Header{"Connection": {"close"}}}
		default:
			return errorf(http.StatusBadRequest, "unreadable_body", "the request body could not be read")
		}
	case errors.Is(err, service.ErrUnavailable):
		// Postgres is restarting or out of reach: nothing was stored, and the
		// same request will work again shortly.
		s.Log.WarnContext(r.Context(), "database unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable",
			Message: "the database is unavailable; nothing was stored; try again in a few seconds", header: http.Header{"Retry-After": {"5"}}}
	case errors.Is(err, service.ErrIdempotencyKeyReused): // a member sync's (jobs' come as *service.InvalidError)
		return errorf(http.StatusUnprocessableEntity, service.CodeIdempotencyKeyReused,
			"this Idempotency-Key was used before with another request: send a new key for a new request")
	case errors.Is(err, service.ErrInvalidInput):
		// The doors refuse control characters first; this is the backstop.
		s.Log.WarnContext(r.Context(), "a value Postgres refused as text", "method", r.Method, "path", r.URL.Path, "err", err)
		return errorf(http.StatusBadRequest, "invalid_input", "a value of the request holds a character that cannot be stored (a control character such as U+0000)")
	case errors.As(err, &missing) && missing.Hint != "":
		return errorf(http.StatusNotFound, "not_found", "no such %s (%s)", missing.Noun, missing.Hint)
	case errors.As(err, &missing):
		return errorf(http.StatusNotFound, "not_found", "no such %s", missing.Noun)
	case errors.Is(err, service.ErrNotFound):
		return errorf(http.StatusNotFound, "not_found", "no such job")
	case errors.Is(err, service.ErrConflict):
		return errorf(http.StatusConflict, "conflict", "the request conflicts with the job's current state")
	case r.Context().Err() != nil && errors.Is(err, context.Canceled):
		// The client went away; nobody reads this answer.
		return errorf(statusClientClosed, "client_closed_request", "the client closed the request")
	case errors.Is(err, context.DeadlineExceeded):
		s.Log.ErrorContext(r.Context(), "request timed out", "method", r.Method, "path", r.URL.Path, "err", err)
		return &apiError{Status: http.StatusServiceUnavailable, Code: "timeout",
			Message: "the service took too long; try again", header: http.Header{"Retry-After": {"5"}}}
	default:
		s.Log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		return errorf(http.StatusInternalServerError, "internal", "internal error")
	}
}

// bodyError is a failure to read the request body (as opposed to bad
// content in it); upload readers wrap their read errors in it.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "reading the request body: " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// statusClientClosed is logged for requests whose client went away
// (nginx's 499); the client never sees it.
const statusClientClosed = 499
