package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/service"
)

// bodySlack is what a body may carry beyond the upload's MaxBytes, which
// ingest enforces with precise messages: multipart boundaries, part headers
// and small form fields.
const bodySlack = 64 << 10

// submitJob is POST /v1/jobs. The body is received in full to a spool on
// disk first (receiveUpload), before any database work: however slowly a
// client sends, it holds no connection. The spooled CSV or JSON then goes
// through the ingest parser into the store's COPY, inside one transaction:
// a rejected upload stores nothing. The service decides (service.Submit,
// service.Estimate).
func (s *server) submitJob(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	key, err := idempotencyKey(r.Header.Values("Idempotency-Key"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	dry, err := dryRun(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	r, body, received, err := s.receiveUpload(w, r)
	defer received()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sub, up, done, err := s.submission(r, body)
	defer done()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sub.IdempotencyKey = key
	if dry {
		// Price the upload without storing it.
		est, err := s.svc.Estimate(r.Context(), p, sub)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		body := estimateOf(est, up)
		if sub.UploadID != "" {
			if body, err = s.uploadEstimate(r, body, sub.UploadID); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		writeJSON(w, http.StatusOK, body)
		return
	}
	st, created, err := s.svc.Submit(r.Context(), p, sub)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+st.ID)
	if !created {
		// The key was used before: the first job is the answer.
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, http.StatusOK, st)
		return
	}
	writeJSON(w, http.StatusCreated, st)
}

// estimateBody is the answer of a dry run: the estimate and what the upload
// held, named as in the job's status.
type estimateBody struct {
	service.Estimate
	service.UploadFields
}

func estimateOf(est service.Estimate, up *service.Counted) estimateBody {
	return estimateBody{Estimate: est, UploadFields: up.Fields()}
}

// idempotencyKey validates the Idempotency-Key header; "" when absent.
func idempotencyKey(vals []string) (string, error) {
	switch len(vals) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", errorf(http.StatusBadRequest, "invalid_idempotency_key", "Idempotency-Key is given %d times", len(vals))
	}
	key := strings.TrimSpace(vals[0])
	if err := service.CheckIdempotencyKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// Content types of an upload, besides JSON and multipart.
const (
	mediaCSV  = "text/csv"
	mediaTSV  = "text/tab-separated-values"
	mediaXLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
)

// submission reads the options of an upload by its content type and
// returns the job to submit, whose Feed reads the rows from body (the
// spooled request body), what the feed found, and done, which removes what
// the upload left on disk: call it on every path.
func (s *server) submission(r *http.Request, body *spooled) (service.Submission, *service.Counted, func(), error) {
	none := func() {}
	ct := r.Header.Get("Content-Type")
	mediaType, params, err := mime.ParseMediaType(ct)
	if err != nil && ct != "" {
		return service.Submission{}, nil, none, errorf(http.StatusUnsupportedMediaType, "unsupported_media_type",
			"Content-Type %q cannot be parsed; send application/json, text/csv, text/tab-separated-values, an .xlsx or multipart/form-data", clip(ct))
	}
	lim := s.svc.Limits()
	c := &service.Counted{}
	switch mediaType {
	case "application/json":
		if q := r.URL.Query(); len(q) > 0 {
			// dry_run is gone (dryRun); the rest are a file upload's options.
			name := slices.Sorted(maps.Keys(q))[0]
			return service.Submission{}, nil, none, &apiError{Status: http.StatusUnprocessableEntity, Code: ingest.CodeInvalidOptions,
				Message: fmt.Sprintf("a JSON job takes its options in the body, not as query parameters (%s): query options are for CSV, TSV, .xlsx and multipart uploads", clip(name)),
				Details: []ingest.FieldError{{Column: name, Message: "give it in the JSON body"}}}
		}
		req, err := ingest.DecodeJSON(body, lim)
		if err != nil {
			return service.Submission{}, nil, none, err
		}
		opts, err := req.Options(lim)
		if err != nil {
			return service.Submission{}, nil, none, err
		}
		if req.UploadID != "" {
			// A stored upload: the service reads it (uploads.go).
			return service.Submission{Options: opts, UploadID: req.UploadID}, c, none, nil
		}
		return service.Submission{Format: "json", Options: opts, Upload: c.Upload, Feed: c.Feed(func(emit func(ingest.Lookup) error) (ingest.Summary, error) {
			return ingest.ExpandJSON(req.Rows, opts.Ingest(), lim, emit)
		})}, c, none, nil

	case mediaCSV, mediaTSV, mediaXLSX:
		opts, err := ingest.ParseOptions(r.URL.Query(), lim)
		if err != nil {
			return service.Submission{}, nil, none, err
		}
		return s.fileSubmission(r, c, opts, body, body.sp, mediaType)

	case "multipart/form-data":
		opts, err := ingest.ParseOptions(r.URL.Query(), lim)
		if err != nil {
			return service.Submission{}, nil, none, err
		}
		if params["boundary"] == "" {
			return service.Submission{}, nil, none, errorf(http.StatusBadRequest, "malformed_multipart", "multipart/form-data without a boundary")
		}
		file, err := filePart(multipart.NewReader(body, params["boundary"]))
		if err != nil {
			return service.Submission{}, nil, none, err
		}
		return s.fileSubmission(r, c, opts, file, nil, partMediaType(file))
	}
	return service.Submission{}, nil, none, errorf(http.StatusUnsupportedMediaType, "unsupported_media_type",
		"Content-Type %q is not supported; send application/json, text/csv or text/tab-separated-values (options as query parameters), %s for an .xlsx, or multipart/form-data with a file field",
		clip(mediaType), mediaXLSX)
}

// fileSubmission is the job of a file upload (CSV, TSV or .xlsx) read from
// body; sp is body's spool when body is the whole spooled file (an .xlsx is
// then read in place), nil for a part of it.
func (s *server) fileSubmission(r *http.Request, c *service.Counted, opts ingest.JobOptions, body io.Reader, sp *spoolFile, mediaType string) (service.Submission, *service.Counted, func(), error) {
	lim := s.svc.Limits()
	in := opts.Ingest()
	switch mediaType {
	case mediaXLSX:
		// Parsing a spooled workbook reads no network: the upload's time
		// limit holds from here, over the copy and the parse.
		deadline := time.Now().Add(s.UploadTimeout)
		maxBytes := lim.MaxBytes
		if maxBytes <= 0 {
			maxBytes = ingest.DefaultLimits().MaxBytes
		}
		remove := func() {}
		switch {
		case sp != nil && sp.Size > maxBytes:
			return service.Submission{}, nil, func() {}, &ingest.Error{Code: ingest.CodeTooLarge, Message: fmt.Sprintf("the upload is larger than %d bytes", maxBytes)}
		case sp == nil: // a multipart file: copy it out of the body
			var err error
			if sp, err = spoolUpload(s.SpoolDir, body, maxBytes); err != nil {
				return service.Submission{}, nil, func() {}, err
			}
			remove = sp.Remove
		}
		ctx, cancel := context.WithDeadline(r.Context(), deadline)
		done := func() { cancel(); remove() }
		return service.Submission{Format: "xlsx", Options: opts, Upload: c.Upload, Feed: c.Feed(func(emit func(ingest.Lookup) error) (ingest.Summary, error) {
			return ingest.ParseXLSX(ctx, sp.Path, sp.TmpDir(), in, lim, emit)
		})}, c, done, nil
	case mediaTSV:
		in.Delimiter = '\t'
	}
	return service.Submission{Format: "csv", Options: opts, Upload: c.Upload, Feed: c.Feed(func(emit func(ingest.Lookup) error) (ingest.Summary, error) {
		return ingest.ParseCSV(body, in, lim, emit)
	})}, c, func() {}, nil
}

// partMediaType is the format of a multipart file: by its file name's
// extension, else its Content-Type; CSV when neither says.
func partMediaType(p *multipart.Part) string {
	switch strings.ToLower(path.Ext(p.FileName())) {
	case ".xlsx":
		return mediaXLSX
	case ".tsv", ".tab":
		return mediaTSV
	case ".csv", ".txt":
		return mediaCSV
	}
	if mt, _, err := mime.ParseMediaType(p.Header.Get("Content-Type")); err == nil && (mt == mediaXLSX || mt == mediaTSV) {
		return mt
	}
	return mediaCSV
}

// filePart skips to the form field "file"; other fields are ignored.
func filePart(mr *multipart.Reader) (*multipart.Part, error) {
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return nil, errorf(http.StatusBadRequest, "missing_file", `the multipart body has no "file" field`)
		}
		if err != nil {
			var be *bodyError
			if errors.As(err, &be) {
				return nil, err
			}
			return nil, errorf(http.StatusBadRequest, "malformed_multipart", "the multipart body cannot be parsed: %v", err)
		}
		if p.FormName() == "file" {
			return p, nil
		}
		if _, err := io.Copy(io.Discard, p); err != nil {
			var be *bodyError
			if errors.As(err, &be) {
				return nil, err
			}
			return nil, errorf(http.StatusBadRequest, "malformed_multipart", "the multipart body cannot be parsed: %v", err)
		}
	}
}

// receiveUpload takes an upload slot for the tenant (service.UploadSlot:
// else a 429) and copies the whole request body to a spool on disk, at most
// the upload's MaxBytes and bodySlack. Only then does the handler parse it
// and open a transaction, so a slow client holds a slot and a file, never a
// database connection. The request returned carries the slot to the
// service, whose parse of this upload takes no second one. done releases
// both: call it on every path.
func (s *server) receiveUpload(w http.ResponseWriter, r *http.Request) (_ *http.Request, body *spooled, done func(), err error) {
	ctx, release, err := s.svc.UploadSlot(r.Context(), principalFrom(r.Context()))
	if err != nil {
		return r, nil, func() {}, err
	}
	lim := s.svc.Limits()
	maxBytes := lim.MaxBytes
	if maxBytes <= 0 {
		maxBytes = ingest.DefaultLimits().MaxBytes
	}
	sp, err := spoolUpload(s.SpoolDir, s.uploadBody(w, r, maxBytes+bodySlack), maxBytes+bodySlack)
	if err != nil {
		release()
		return r, nil, func() {}, err
	}
	// The body is in. The parse and the commit of a large upload may take
	// longer than the server's WriteTimeout, counted from the request's
	// start: they get the upload's own time, as its receiving did.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.UploadTimeout))
	body, err = openSpool(sp)
	if err != nil {
		sp.Remove()
		release()
		return r, nil, func() {}, err
	}
	return r.WithContext(ctx), body, func() { body.close(); release() }, nil
}

// uploadBody caps the body at maxBytes and guards against slow clients: from
// the first read, the connection's read deadline is pushed UploadIdleTimeout
// ahead as data arrives, never past UploadTimeout after the request began.
// Read errors come back as *bodyError.
func (s *server) uploadBody(w http.ResponseWriter, r *http.Request, maxBytes int64) io.Reader {
	return &deadlineBody{
		body: http.MaxBytesReader(w, r.Body, maxBytes),
		rc:   http.NewResponseController(w),
		idle: s.UploadIdleTimeout,
		hard: time.Now().Add(s.UploadTimeout),
	}
}

// deadlineBody extends the read deadline of the connection as data flows.
// The deadline is wall-clock time: it is the network's, not the injected
// clock's.
type deadlineBody struct {
	body io.Reader
	rc   *http.ResponseController
	idle time.Duration
	hard time.Time
	set  time.Time // the deadline last set
	off  bool      // no deadlines: unsupported, or the body is done
}

func (b *deadlineBody) extend(now time.Time) {
	if b.off {
		return
	}
	next := now.Add(b.idle)
	if next.After(b.hard) {
		next = b.hard
	}
	// Move the deadline in steps, not on every read.
	if !b.set.IsZero() && next.Sub(b.set) < b.idle/8 {
		return
	}
	if err := b.rc.SetReadDeadline(next); err != nil {
		b.off = true
		return
	}
	b.set = next
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if b.set.IsZero() {
		b.extend(time.Now())
	}
	n, err := b.body.Read(p)
	switch {
	case err == io.EOF:
		// The whole body is in. Lift the deadline: the server now watches
		// the connection for a hang-up, and a deadline firing there would
		// cancel the request while the job commits.
		if !b.off && !b.set.IsZero() {
			_ = b.rc.SetReadDeadline(time.Time{})
		}
		b.off = true
	case err != nil:
		err = &bodyError{err: err}
	case n > 0:
		b.extend(time.Now())
	}
	return n, err
}
