package service

import (
	"errors"
	"time"

	"github.com/enrichq/enrichq/internal/watches"
)

// WatchLimits bound a tenant's watches (Config.Watches): how many it has,
// how many it makes an hour, how often one is run now. Zero fields take
// internal/watches' defaults (20, 10, an hour).
type WatchLimits = watches.Limits

// TooManyRequestsError: the operation is throttled; nothing was done, and
// the same call may work after RetryAfter. Each door says it its way
// (REST: 429 with Retry-After).
type TooManyRequestsError struct {
	Code       string
	Message    string
	RetryAfter time.Duration
}

func (e *TooManyRequestsError) Error() string { return e.Code + ": " + e.Message }

// watchRefusal turns the watch rules' refusals into the service's errors;
// any other err as it is.
func watchRefusal(err error) error {
	var limit *watches.LimitError
	var throttled *watches.ThrottleError
	switch {
	case errors.As(err, &limit):
		return &ConflictError{Code: "watch_limit_reached", Message: limit.Error() + " (ENRICHQ_MAX_WATCHES)"}
	case errors.As(err, &throttled):
		return &TooManyRequestsError{Code: "too_many_requests", Message: throttled.Message, RetryAfter: throttled.RetryAfter}
	}
	return err
}
