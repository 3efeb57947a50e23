package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/service"
)

// toolError turns an error of the service into the message a tool answers
// with (a tool error: the session goes on). It is the one place MCP maps
// errors, with the API's codes and messages (internal/httpapi's writeError):
// "code: message", then where the input is wrong. Anything unexpected is
// logged and answered "internal: internal error", never with its detail.
func (t *tools) toolError(ctx context.Context, tool string, err error) error {
	var (
		ie        *ingest.Error
		forbidden *service.ForbiddenError
		invalid   *service.InvalidError
		conflict  *service.ConflictError
		uploads   *service.TooManyUploadsError
		throttled *service.TooManyRequestsError
		missing   *service.NotFoundError
		mine      *toolErr
	)
	switch {
	case errors.As(err, &mine):
		return err
	case errors.As(err, &ie):
		return errorWithDetails(ie.Code, ie.Message, ie.Details)
	case errors.As(err, &forbidden):
		return fmt.Errorf("insufficient_scope: %s", forbidden.Error())
	case errors.Is(err, service.ErrNoTenant):
		t.log.ErrorContext(ctx, "an API key without a tenant", "tool", tool)
		return errors.New("no_tenant: this API key belongs to no tenant")
	case errors.As(err, &invalid):
		return errorWithDetails(invalid.Code, invalid.Message, invalid.Details)
	case errors.As(err, &conflict):
		return fmt.Errorf("%s: %s", conflict.Code, conflict.Message)
	case errors.As(err, &uploads):
		return fmt.Errorf("too_many_uploads: %s (retry in %s)", uploads.Message, uploads.RetryAfter)
	case errors.As(err, &throttled):
		return fmt.Errorf("%s: %s (retry in %s)", throttled.Code, throttled.Message, throttled.RetryAfter.Round(time.Second))
	case errors.Is(err, service.ErrUnavailable):
		t.log.WarnContext(ctx, "database unavailable", "tool", tool, "err", err)
		return errors.New("unavailable: the database is unavailable; nothing was stored; try again in a few seconds")
	case errors.Is(err, service.ErrInvalidInput):
		t.log.WarnContext(ctx, "a value Postgres refused as text", "tool", tool, "err", err)
		return errors.New("invalid_input: a value holds a character that cannot be stored (a control character such as U+0000)")
	case errors.As(err, &missing):
		return fmt.Errorf("not_found: no such %s", missing.Noun)
	case errors.Is(err, service.ErrNotFound):
		return errors.New("not_found: no such job")
	case errors.Is(err, service.ErrConflict):
		return errors.New("conflict: the request conflicts with the job's current state")
	case errors.Is(err, context.DeadlineExceeded):
		t.log.ErrorContext(ctx, "tool timed out", "tool", tool, "err", err)
		return errors.New("timeout: the service took too long; try again")
	default:
		t.log.ErrorContext(ctx, "internal error", "tool", tool, "err", err)
		return errors.New("internal: internal error")
	}
}

// toolErr is a refusal a tool names itself, already worded for the assistant.
type toolErr struct{ msg string }

func (e *toolErr) Error() string { return e.msg }

func refusef(format string, args ...any) error { return &toolErr{msg: fmt.Sprintf(format, args...)} }

// errorWithDetails is "code: message" and up to five of the details, each
// with its row and column.
func errorWithDetails(code, msg string, details []ingest.FieldError) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", code, msg)
	for i, d := range details {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(details)-i)
			break
		}
		b.WriteString("; ")
		if d.Row > 0 {
			fmt.Fprintf(&b, "row %d, ", d.Row)
		}
		if d.Column != "" {
			fmt.Fprintf(&b, "%s: ", d.Column)
		}
		b.WriteString(d.Message)
	}
	return errors.New(b.String())
}
