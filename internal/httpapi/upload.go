package httpapi

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jobs"
	"github.com/enrichq/enrichq/internal/service"
)

// bodySlack is what a body may carry beyond the upload's MaxBytes, which
// ingest enforces with precise messages: multipart boundaries, part headers
// and small form fields.
const bodySlack = 64 << 10

// submitJob is POST /v1/jobs. The upload streams from the body through the
// ingest parser into the store's COPY, inside one transaction: a rejected
// upload stores nothing, and nothing is buffered but the JSON body's rows.
// The service decides (service.Submit, service.Estimate).
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
	sub, err := s.submission(w, r)
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
		writeJSON(w, http.StatusOK, est)
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

// idempotencyKey reads the Idempotency-Key header; "" when absent. Checked
// before the upload is read, so the answer does not depend on the body.
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

// submission reads the options of an upload by its content type and
// returns the job to submit, whose Feed streams the rows from the body.
func (s *server) submission(w http.ResponseWriter, r *http.Request) (jobs.Submission, error) {
	ct := r.Header.Get("Content-Type")
	mediaType, params, err := mime.ParseMediaType(ct)
	if err != nil && ct != "" {
		return jobs.Submission{}, errorf(http.StatusUnsupportedMediaType, "unsupported_media_type",
			"Content-Type %q cannot be parsed; send application/json, text/csv or multipart/form-data", clip(ct))
	}
	lim := s.svc.Limits()
	switch mediaType {
	case "application/json":
		body := s.uploadBody(w, r, lim.MaxBytes+bodySlack)
		req, err := ingest.DecodeJSON(body, lim)
		if err != nil {
			return jobs.Submission{}, err
		}
		opts, err := req.Options(lim)
		if err != nil {
			return jobs.Submission{}, err
		}
		return jobs.Submission{Format: "json", Options: opts, Feed: func(emit func(ingest.Lookup) error) error {
			return ingest.ExpandRows(req.Rows, ingest.Options{Roles: opts.Roles}, lim, emit)
		}}, nil

	case "text/csv":
		opts, err := ingest.ParseOptions(r.URL.Query(), lim)
		if err != nil {
			return jobs.Submission{}, err
		}
		body := s.uploadBody(w, r, lim.MaxBytes+bodySlack)
		return jobs.Submission{Format: "csv", Options: opts, Feed: func(emit func(ingest.Lookup) error) error {
			return ingest.ParseCSV(body, ingest.Options{Roles: opts.Roles}, lim, emit)
		}}, nil

	case "multipart/form-data":
		opts, err := ingest.ParseOptions(r.URL.Query(), lim)
		if err != nil {
			return jobs.Submission{}, err
		}
		if params["boundary"] == "" {
			return jobs.Submission{}, errorf(http.StatusBadRequest, "malformed_multipart", "multipart/form-data without a boundary")
		}
		body := s.uploadBody(w, r, lim.MaxBytes+bodySlack)
		file, err := filePart(multipart.NewReader(body, params["boundary"]))
		if err != nil {
			return jobs.Submission{}, err
		}
		return jobs.Submission{Format: "csv", Options: opts, Feed: func(emit func(ingest.Lookup) error) error {
			return ingest.ParseCSV(file, ingest.Options{Roles: opts.Roles}, lim, emit)
		}}, nil
	}
	return jobs.Submission{}, errorf(http.StatusUnsupportedMediaType, "unsupported_media_type",
		"Content-Type %q is not supported; send application/json, text/csv (options as query parameters) or multipart/form-data with a file field",
		clip(mediaType))
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
