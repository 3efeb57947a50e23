package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/store"
)

// MaxIdempotencyKey is the longest idempotency key accepted, in characters.
const MaxIdempotencyKey = 200

// CheckIdempotencyKey is nil for a key the service takes ("" for none), else
// an *InvalidError invalid_idempotency_key. Submit checks it; a front door
// may check it before it reads an upload.
func CheckIdempotencyKey(key string) error {
	if !utf8.ValidString(key) || strings.IndexFunc(key, unicode.IsControl) >= 0 {
		return &InvalidError{Code: CodeInvalidIdempotencyKey, Message: "Idempotency-Key must be printable UTF-8 text"}
	}
	if n := utf8.RuneCountInString(key); n > MaxIdempotencyKey {
		return &InvalidError{Code: CodeInvalidIdempotencyKey,
			Message: fmt.Sprintf("Idempotency-Key is %d characters; the limit is %d", n, MaxIdempotencyKey)}
	}
	return nil
}

// requestOptions is what a submission asked beyond its rows, for the
// digest kept beside its idempotency key: the options as given (before
// defaults) and the stored upload it names.
// Every option of ingest.JobOptions is in it (a test holds that); one
// added later goes at the end, omitted when unset, so that the digests of
// keys used before stay what they were.
func requestOptions(sub Submission) []byte {
	o := sub.Options
	b, _ := json.Marshal(struct {
		Name, CallbackURL, Encoding, Sheet, UploadID string
		Lookups                                      []domain.Stage
		Roles                                        []string
		BudgetCredits                                *int64
		MaxAge                                       time.Duration
		Columns                                      map[string]string
		Vendors                                      []string `json:",omitempty"`
	}{o.Name, o.CallbackURL, o.Encoding, o.Sheet, sub.UploadID, o.Lookups, o.Roles, o.BudgetCredits, o.MaxAge, o.Columns, o.Vendors})
	return b
}

// Submit stores a job for the tenant and hands it to the queue (scope
// submit). sub's Feed streams the upload's lookups; its Tenant is the
// principal's, whatever it held. The upload is parsed within the limits and
// the job options checked (the callback URL too) before anything is
// stored: a rejected upload stores nothing. A job without a budget takes
// the tenant's default job budget. With an idempotency key the
// tenant used before, nothing is stored and the first job's status is the
// answer, with created false. Parsing the upload holds an upload slot (past
// the slots: a *TooManyUploadsError).
func (s *Service) Submit(ctx context.Context, p Principal, sub Submission) (st JobStatus, created bool, err error) {
	if err := p.Require(domain.ScopeSubmit); err != nil {
		return JobStatus{}, false, err
	}
	if err := CheckIdempotencyKey(sub.IdempotencyKey); err != nil {
		return JobStatus{}, false, err
	}
	release, err := s.parseSlot(ctx, p.Tenant, sub)
	if err != nil {
		return JobStatus{}, false, err
	}
	defer release()
	if err := s.checkVendors(sub.Options.Vendors); err != nil {
		return JobStatus{}, false, err
	}
	if err := s.checkVerify(sub.Options); err != nil {
		return JobStatus{}, false, err
	}
	sub.Tenant = p.Tenant
	if sub.IdempotencyKey != "" {
		sub.RequestOptions = requestOptions(sub) // as asked: the tenant's default budget may change between retries
	}
	if err := s.fromUpload(ctx, p.Tenant, &sub); err != nil {
		return JobStatus{}, false, err
	}
	if err := s.withDefaultBudget(ctx, p.Tenant, &sub); err != nil {
		return JobStatus{}, false, err
	}
	job, created, err := s.submit.Submit(ctx, sub)
	if errors.Is(err, store.ErrIdempotencyKeyReused) {
		return JobStatus{}, false, &InvalidError{Code: CodeIdempotencyKeyReused,
			Message: "this Idempotency-Key was used before with another request (other rows or options): send a new key for a new job"}
	}
	if err != nil {
		return JobStatus{}, false, err
	}
	if !created {
		// The key was used before: the first job, as it is now.
		st, err := s.status(ctx, job)
		return st, false, err
	}
	// A new job's rows are all pending: no need to count them.
	return StatusOf(job, map[domain.RowState]int{domain.RowPending: job.TotalRows}, s.now()), true, nil
}

// parseSlot is the upload slot of a submission that parses an upload (its
// Feed, or the stored upload of its UploadID); nothing to hold for one that
// parses none.
func (s *Service) parseSlot(ctx context.Context, tenant string, sub Submission) (release func(), err error) {
	if sub.Feed == nil && sub.UploadID == "" {
		return func() {}, nil
	}
	return s.uploadSlot(ctx, tenant)
}

// checkVendors refuses a job's vendors option naming a vendor the vendors
// file does not configure: the worker would skip it, and the job would ask
// fewer vendors than the caller meant. Without a vendors file the one
// vendor is config.FallbackVendorName.
func (s *Service) checkVendors(names []string) error {
	known := []string{config.FallbackVendorName}
	if len(s.vendors.List) > 0 {
		known = known[:0]
		for _, v := range s.vendors.List {
			known = append(known, v.Name)
		}
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return invalidParam("vendors", "%q is not a configured vendor (configured: %s)", n, strings.Join(known, ", "))
		}
	}
	return nil
}

// checkVerify refuses a job asking verify when none of its vendors (its
// `vendors` option, else every configured one) sells verification: its
// emails could not be checked, and it would stop at the first one found.
func (s *Service) checkVerify(o ingest.JobOptions) error {
	if !slices.Contains(o.Lookups, domain.StageVerify) {
		return nil
	}
	if len(s.vendors.List) > 0 {
		all, err := s.describedVendors()
		if err != nil {
			return err
		}
		for _, v := range jobVendors(all, o.Vendors) {
			if v.Caps.Answers(domain.StageVerify, domain.InputEmail, false) {
				return nil
			}
		}
	}
	return invalidParam("lookups", "verify: none of the job's vendors verifies emails; configure one that does (docs/vendors.md, The verify stage) or leave verify out")
}
