package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/spool"
	"github.com/enrichq/enrichq/internal/store"
)

// Defaults of UploadLimits.
const (
	DefaultUploadTTL      = 24 * time.Hour
	DefaultMaxUploads     = 100
	DefaultMaxUploadBytes = 1 << 30 // 1 GiB of a tenant's live uploads
)

// UploadLimits bound a tenant's stored uploads. Zero fields take the defaults.
type UploadLimits struct {
	// TTL is how long an upload is kept; default DefaultUploadTTL.
	TTL time.Duration
	// MaxUploads caps a tenant's live uploads; default DefaultMaxUploads.
	MaxUploads int
	// MaxBytes caps the bytes of a tenant's live uploads, summed; default
	// DefaultMaxUploadBytes. One upload is also capped by Limits.MaxBytes.
	MaxBytes int64
}

func (l UploadLimits) withDefaults() UploadLimits {
	if l.TTL <= 0 {
		l.TTL = DefaultUploadTTL
	}
	if l.MaxUploads <= 0 {
		l.MaxUploads = DefaultMaxUploads
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxUploadBytes
	}
	return l
}

// Formats of an upload (UploadRequest.Format).
const (
	FormatCSV  = "csv"
	FormatTSV  = "tsv"
	FormatXLSX = "xlsx"
	FormatJSON = "json" // a job's JSON body: its rows and columns
)

// UploadRequest is a file to store for later estimates and submits.
type UploadRequest struct {
	// Filename is the file's name, shown back; "" for none.
	Filename string
	// Format says how Body is read: one of the Format constants.
	Format string
	// Body is read to its end, at most Limits.MaxBytes.
	Body io.Reader
	// Options of a CSV, TSV or .xlsx: the column mapping, encoding and
	// sheet (ingest.ParseOptions). A JSON body carries its own. The job's
	// options (name, lookups, roles, budget, max_age, callback) are given
	// when the upload is estimated or submitted, not here.
	Options ingest.JobOptions
}

// Upload is the view of a stored upload: what it held, read without job
// roles, and until when it is kept.
type Upload struct {
	ID       string `json:"id"`
	Filename string `json:"filename"`
	Format   string `json:"format"`
	Bytes    int64  `json:"bytes"`
	Rows     int    `json:"rows"` // data rows that were not blank
	// LookupsWithoutRoles is what the file looks up without job roles;
	// nil when some rows need roles (RowsNeedingRoles).
	LookupsWithoutRoles *int `json:"lookups_without_roles,omitempty"`
	// RowsNeedingRoles are company-only rows: an estimate or submit must
	// give roles for them.
	RowsNeedingRoles int               `json:"rows_needing_roles"`
	Columns          map[string]string `json:"columns"`       // uploaded header -> field
	ExtraColumns     []string          `json:"extra_columns"` // headers kept as extra columns
	CreatedAt        time.Time         `json:"created_at"`
	ExpiresAt        time.Time         `json:"expires_at"`
}

func uploadOf(u store.UploadFile) Upload {
	v := Upload{ID: u.ID, Filename: u.Filename, Format: u.Format, Bytes: u.Size, Rows: u.Rows,
		RowsNeedingRoles: u.RowsNeedingRoles, Columns: u.Columns, ExtraColumns: nonNil(u.ExtraColumns),
		CreatedAt: u.CreatedAt, ExpiresAt: u.ExpiresAt}
	if u.RowsNeedingRoles == 0 {
		n := u.Lookups
		v.LookupsWithoutRoles = &n
	}
	if v.Columns == nil {
		v.Columns = map[string]string{}
	}
	return v
}

// CodeUploadQuota is the code of the *ConflictError of an upload past the
// tenant's cap of live uploads.
const CodeUploadQuota = "upload_quota_exceeded"

// maxFilename caps the stored file name, in bytes.
const maxFilename = 255

// Upload parses and validates a file as a submit would (a bad file is the
// same *ingest.Error, and nothing is stored), then stores it for the
// tenant until UploadLimits.TTL from now (scope submit). A company-only
// row needs no roles yet: they are given when the upload is estimated or
// submitted by its id (Submission.UploadID). Past the tenant's cap it
// is a *ConflictError CodeUploadQuota. Reading and parsing the file holds
// an upload slot (past the slots: a *TooManyUploadsError).
func (s *Service) Upload(ctx context.Context, p Principal, req UploadRequest) (Upload, error) {
	if err := p.Require(domain.ScopeSubmit); err != nil {
		return Upload{}, err
	}
	if !slices.Contains([]string{FormatCSV, FormatTSV, FormatXLSX, FormatJSON}, req.Format) {
		return Upload{}, invalidParam("format", "format %q is not csv, tsv, xlsx or json", req.Format)
	}
	if req.Body == nil {
		return Upload{}, &ingest.Error{Code: ingest.CodeEmptyUpload, Message: "the upload is empty"}
	}
	release, err := s.uploadSlot(ctx, p.Tenant)
	if err != nil {
		return Upload{}, err
	}
	defer release()
	body, err := io.ReadAll(io.LimitReader(req.Body, s.limits.MaxBytes+1))
	if err != nil {
		return Upload{}, err
	}
	if int64(len(body)) > s.limits.MaxBytes {
		return Upload{}, &ingest.Error{Code: ingest.CodeTooLarge, Message: fmt.Sprintf("the upload is larger than %d bytes", s.limits.MaxBytes)}
	}
	opts := req.Options
	if req.Format == FormatJSON {
		jr, err := ingest.DecodeJSON(bytes.NewReader(body), s.limits)
		if err != nil {
			return Upload{}, err
		}
		if jr.UploadID != "" {
			return Upload{}, &InvalidError{Code: CodeInvalidOptions, Message: "an upload holds rows, not an upload_id",
				Details: []ingest.FieldError{{Column: "upload_id", Message: `send "rows"`}}}
		}
		if opts, err = jr.Options(s.limits); err != nil {
			return Upload{}, err
		}
	}
	if err := jobOptionsGiven(opts); err != nil {
		return Upload{}, err
	}
	u := store.UploadFile{Tenant: p.Tenant, Filename: cleanFilename(req.Filename), Format: req.Format,
		Read: store.UploadRead{Columns: opts.Columns, Encoding: opts.Encoding, Sheet: opts.Sheet}, Body: body}
	var people personHashes
	var emit func(ingest.Lookup) error
	if len(s.erasureKey) > 0 {
		emit = func(l ingest.Lookup) error {
			people.add(s.erasureKey, l)
			return nil
		}
	}
	sum, err := s.parseStored(ctx, u, ingest.Options{DeferRoles: true}, emit)
	if err != nil {
		return Upload{}, err
	}
	u.PersonHashes = people.bytes(len(s.erasureKey) > 0)
	u.Rows, u.Lookups, u.RowsNeedingRoles, u.Columns, u.ExtraColumns = sum.Rows, sum.Lookups, sum.RowsNeedingRoles, sum.Columns, sum.Extra
	now := s.now().Truncate(time.Microsecond) // as Postgres keeps it
	u.ExpiresAt = now.Add(s.uploads.TTL)
	saved, err := s.store.CreateUploadFile(ctx, u, now, store.UploadQuota{MaxUploads: s.uploads.MaxUploads, MaxBytes: s.uploads.MaxBytes})
	var qe *store.UploadQuotaError
	if errors.As(err, &qe) {
		return Upload{}, &ConflictError{Code: CodeUploadQuota, Message: qe.Error() +
			"; delete an upload (DELETE /v1/uploads/{id}) or wait for one to expire"}
	}
	if err != nil {
		return Upload{}, err
	}
	return uploadOf(saved), nil
}

// personHashes collects the keyed hashes of the people an upload's rows
// name (jobs.UploadPersonKeys), each cut to store.PersonHashBytes: an
// erasure finds the stored upload by them however the file wrote the
// person (any case, a URL with www., inside a zip or UTF-16).
type personHashes struct {
	hashes [][store.PersonHashBytes]byte
}

func (h *personHashes) add(key []byte, l ingest.Lookup) {
	for _, k := range jobs.UploadPersonKeys(l) {
		h.hashes = append(h.hashes, [store.PersonHashBytes]byte(jobs.KeyedHash(key, k)[:store.PersonHashBytes]))
	}
}

// bytes are the distinct hashes, sorted and concatenated; nil when not
// kept (no erasure key), empty for an upload that names nobody.
func (h *personHashes) bytes(kept bool) []byte {
	if !kept {
		return nil
	}
	slices.SortFunc(h.hashes, func(a, b [store.PersonHashBytes]byte) int { return bytes.Compare(a[:], b[:]) })
	h.hashes = slices.Compact(h.hashes)
	out := make([]byte, 0, len(h.hashes)*store.PersonHashBytes)
	for _, x := range h.hashes {
		out = append(out, x[:]...)
	}
	return out
}

// jobOptionsGiven refuses the job's own options on an upload: they belong to
// the estimate or submit, and one kept here would be silently ignored.
func jobOptionsGiven(o ingest.JobOptions) error {
	var given []string
	if o.Name != "" {
		given = append(given, "name")
	}
	if len(o.Roles) > 0 {
		given = append(given, "roles")
	}
	if !slices.Equal(o.Lookups, []domain.Stage{domain.StageProfile}) && len(o.Lookups) > 0 {
		given = append(given, "lookups")
	}
	if o.BudgetCredits != nil {
		given = append(given, "budget_credits")
	}
	if o.MaxAge != ingest.DefaultMaxAge {
		given = append(given, "max_age")
	}
	if o.CallbackURL != "" {
		given = append(given, "callback_url")
	}
	if len(given) == 0 {
		return nil
	}
	e := &InvalidError{Code: CodeInvalidOptions, Message: "an upload takes only how to read the file (columns, encoding, sheet)"}
	for _, f := range given {
		e.Details = append(e.Details, ingest.FieldError{Column: f,
			Message: f + " is given when the upload is estimated or submitted (POST /v1/jobs with upload_id)"})
	}
	return e
}

// GetUpload returns the tenant's upload id (scope read); ErrNotFound when it
// has none of that id, or it expired.
func (s *Service) GetUpload(ctx context.Context, p Principal, id string) (_ Upload, err error) {
	defer func() { err = uploadNotFound(err) }()
	if err := p.Require(domain.ScopeRead); err != nil {
		return Upload{}, err
	}
	u, err := s.store.GetUploadFile(ctx, p.Tenant, id, s.now(), false)
	if err != nil {
		return Upload{}, err
	}
	return uploadOf(u), nil
}

// DeleteUpload removes the tenant's upload id (scope submit); ErrNotFound
// when it has none of that id. Jobs submitted from it keep their rows.
func (s *Service) DeleteUpload(ctx context.Context, p Principal, id string) (err error) {
	defer func() { err = uploadNotFound(err) }()
	if err := p.Require(domain.ScopeSubmit); err != nil {
		return err
	}
	return s.store.DeleteUploadFile(ctx, p.Tenant, id)
}

// fromUpload reads the tenant's stored upload sub.UploadID into sub's Feed,
// Upload and Format, so that an estimate or submit by id runs the parser an
// inline upload runs, with sub's roles. Nothing to do without an UploadID.
func (s *Service) fromUpload(ctx context.Context, tenant string, sub *Submission) error {
	if sub.UploadID == "" {
		return nil
	}
	if sub.Feed != nil {
		return &InvalidError{Code: CodeInvalidOptions, Message: "invalid job options",
			Details: []ingest.FieldError{{Column: "upload_id", Message: `give rows or upload_id, not both`}}}
	}
	o := sub.Options
	if len(o.Columns) > 0 || o.Encoding != ingest.EncodingAuto || o.Sheet != "" {
		return &InvalidError{Code: CodeInvalidOptions, Message: "invalid job options",
			Details: []ingest.FieldError{{Column: "upload_id", Message: "columns, encoding and sheet are the upload's, fixed when it was uploaded"}}}
	}
	u, err := s.store.GetUploadFile(ctx, tenant, sub.UploadID, s.now(), true)
	if errors.Is(err, ErrNotFound) {
		return &InvalidError{Code: CodeInvalidOptions, Message: "no such upload",
			Details: []ingest.FieldError{{Column: "upload_id", Message: fmt.Sprintf(
				"no upload %q: it was deleted, or it expired (uploads are kept %s)", clipBytes(sub.UploadID, 64), s.uploads.TTL)}}}
	}
	if err != nil {
		return err
	}
	in := ingest.Options{Roles: o.Roles}
	c := &Counted{}
	sub.Format = jobFormat(u.Format)
	sub.Feed = c.Feed(func(emit func(ingest.Lookup) error) (ingest.Summary, error) {
		return s.parseStored(ctx, u, in, emit)
	})
	sub.Upload = c.Upload
	return nil
}

// jobFormat is a job's source_format of an upload format: a TSV is a CSV.
func jobFormat(format string) string {
	if format == FormatTSV {
		return FormatCSV
	}
	return format
}

// parseStored reads a stored upload with the ingest parser of its format,
// its column mapping, encoding and sheet, and in's roles.
func (s *Service) parseStored(ctx context.Context, u store.UploadFile, in ingest.Options, emit func(ingest.Lookup) error) (ingest.Summary, error) {
	in.Columns, in.Encoding, in.Sheet = u.Read.Columns, u.Read.Encoding, u.Read.Sheet
	switch u.Format {
	case FormatCSV:
		return ingest.ParseCSV(bytes.NewReader(u.Body), in, s.limits, emit)
	case FormatTSV:
		in.Delimiter = '\t'
		return ingest.ParseCSV(bytes.NewReader(u.Body), in, s.limits, emit)
	case FormatJSON:
		jr, err := ingest.DecodeJSON(bytes.NewReader(u.Body), s.limits)
		if err != nil {
			return ingest.Summary{}, err
		}
		return ingest.ExpandJSON(jr.Rows, in, s.limits, emit)
	case FormatXLSX:
		// A workbook is a zip: the parser wants a file.
		folder, err := spool.New(s.spoolDir)
		if err != nil {
			return ingest.Summary{}, fmt.Errorf("service: a folder for the workbook: %w", err)
		}
		defer folder.Remove()
		dir := folder.Path
		path := filepath.Join(dir, "upload.xlsx")
		if err := os.WriteFile(path, u.Body, 0o600); err != nil {
			return ingest.Summary{}, fmt.Errorf("service: writing the workbook: %w", err)
		}
		return ingest.ParseXLSX(ctx, path, dir, in, s.limits, emit)
	}
	return ingest.Summary{}, fmt.Errorf("service: upload %s has the unknown format %q", u.ID, u.Format)
}

// cleanFilename is the last element of a client's file name, printable
// UTF-8 of at most maxFilename bytes: it is shown back, never opened.
func cleanFilename(name string) string {
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(name, ""))
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	return clipBytes(strings.TrimSpace(name), maxFilename)
}

// clipBytes cuts s to at most n bytes, on a rune boundary.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// uploadNotFound names the upload in a not found: kept a while, it may
// have expired.
func uploadNotFound(err error) error {
	if errors.Is(err, ErrNotFound) {
		return &NotFoundError{Noun: "upload", Hint: "it may have expired"}
	}
	return err
}
