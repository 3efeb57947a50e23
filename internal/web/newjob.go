package web

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/service"
)

// A new job takes two steps: the file and the options give an estimate
// (nothing is spent: the file is kept as a stored upload), and the
// estimate's page asks to confirm the amount before the job is submitted
// by the upload's id.

// jobForm is what the new-job form holds, kept between its two steps.
type jobForm struct {
	Name    string
	Roles   string
	Lookups []domain.Stage
	Budget  string
}

// values are the form's options as the API's query parameters, which
// ingest.ParseOptions reads as it reads an upload's.
func (f jobForm) values() url.Values {
	v := url.Values{}
	if f.Name != "" {
		v.Set("name", f.Name)
	}
	if f.Roles != "" {
		v.Set("roles", f.Roles)
	}
	for _, l := range f.Lookups {
		v.Add("lookups", string(l))
	}
	if f.Budget != "" {
		v.Set("budget_credits", f.Budget)
	}
	return v
}

func (f jobForm) Has(l domain.Stage) bool {
	for _, x := range f.Lookups {
		if x == l {
			return true
		}
	}
	return false
}

func readJobForm(v url.Values) jobForm {
	f := jobForm{Name: strings.TrimSpace(v.Get("name")), Roles: strings.TrimSpace(v.Get("roles")),
		Budget: strings.TrimSpace(v.Get("budget_credits"))}
	for _, l := range v["lookups"] {
		f.Lookups = append(f.Lookups, domain.Stage(l))
	}
	return f
}

type newJobData struct {
	Form    jobForm
	Stages  []domain.Stage
	MaxSize string
	Problem *problem
}

// problem is what was wrong with a file or the options, row and column
// where the parser named them.
type problem struct {
	Message string
	Details []ingest.FieldError
}

func problemOf(err error) (*problem, bool) {
	var ie *ingest.Error
	var se *service.InvalidError
	var ce *service.ConflictError
	switch {
	case errors.As(err, &ie):
		return &problem{Message: ie.Message, Details: ie.Details}, true
	case errors.As(err, &se):
		return &problem{Message: se.Message, Details: se.Details}, true
	case errors.As(err, &ce):
		return &problem{Message: ce.Message}, true
	}
	return nil, false
}

// NewJob is the new-job form.
func (u *UI) NewJob(w http.ResponseWriter, r *http.Request) {
	u.newJobPage(w, r, http.StatusOK, jobForm{Lookups: []domain.Stage{domain.StageProfile}}, nil)
}

func (u *UI) newJobPage(w http.ResponseWriter, r *http.Request, status int, f jobForm, p *problem) {
	u.render(w, r, status, "newjob", page{Title: "New job", Nav: "new", Data: newJobData{Form: f, Stages: domain.Lookups,
		MaxSize: humanBytes(u.svc.Limits().MaxBytes), Problem: p}})
}

type estimateData struct {
	Form      jobForm
	Upload    service.Upload
	Estimate  service.Estimate
	Budget    *int64
	AtMost    int64 // what the job may spend: the estimate's most, capped by the budget
	Options   url.Values
	Idem      string
	Uncapped  bool
	Exceeds   bool // the estimate's most is above the budget: the job may pause
	StageList string
}

// Estimate stores the file as an upload and prices the job: nothing is
// spent. The answer asks to confirm the amount.
//
// The file streams from the form into the upload (UploadForm); the page
// sends the options after it, so they are read once it is stored, and a
// file stored for a form or options found wrong is deleted again: nothing
// half-stored.
func (u *UI) Estimate(w http.ResponseWriter, r *http.Request, form *uploadForm) {
	p := sessionFrom(r.Context()).Principal
	var (
		filename     string
		format       string
		formatOK     bool
		up           service.Upload
		stored       bool
		uploadFailed error
	)
	if file := form.File; file != nil {
		filename = file.FileName()
		if format, formatOK = formatOf(filename, file.Header.Get("Content-Type")); formatOK {
			// The file is read as the API reads one sent without options:
			// the job's own options come with the estimate.
			read, err := ingest.ParseOptions(url.Values{}, u.svc.Limits())
			if err != nil {
				u.fail(w, r, err)
				return
			}
			up, uploadFailed = u.svc.Upload(r.Context(), p, service.UploadRequest{Filename: filename, Format: format, Body: file, Options: read})
			stored = uploadFailed == nil
		}
	}
	drop := func() {
		if !stored {
			return
		}
		if err := u.svc.DeleteUpload(r.Context(), p, up.ID); err != nil {
			u.cfg.Log.WarnContext(r.Context(), "web: deleting the upload of a refused estimate", "upload_id", up.ID, "err", err)
		}
	}
	fields, err := form.Fields()
	if err != nil {
		drop()
		u.formFailed(w, r, 0, err)
		return
	}
	f := readJobForm(fields)
	switch {
	case filename == "":
		u.newJobPage(w, r, http.StatusBadRequest, f, &problem{Message: "Choose a file to upload (.csv, .tsv, .xlsx or .json)."})
		return
	case !formatOK:
		u.newJobPage(w, r, http.StatusUnsupportedMediaType, f, &problem{Message: "“" + filename +
			"” is not a file this page reads: choose a .csv, .tsv, .xlsx or .json file."})
		return
	case uploadFailed != nil:
		u.estimateFailed(w, r, f, uploadFailed)
		return
	}
	opts, err := ingest.ParseOptions(f.values(), u.svc.Limits())
	if err != nil {
		drop()
		u.estimateFailed(w, r, f, err)
		return
	}
	est, err := u.svc.Estimate(r.Context(), p, service.Submission{UploadID: up.ID, Options: opts})
	if err != nil {
		drop()
		u.estimateFailed(w, r, f, err)
		return
	}
	d := estimateData{Form: f, Upload: up, Estimate: est, AtMost: est.Credits.Max, Idem: idempotencyKey()}
	if b := opts.BudgetCredits; b != nil {
		d.Budget = b
		d.AtMost = min(*b, est.Credits.Max)
		d.Exceeds = est.Credits.Max > *b
	} else if acct, err := u.svc.Account(r.Context(), p); err == nil && acct.DefaultJobBudget != nil {
		// Submit gives the job the tenant's default budget: say so now.
		d.Budget = acct.DefaultJobBudget
		d.AtMost = min(*d.Budget, est.Credits.Max)
		d.Exceeds = est.Credits.Max > *d.Budget
	} else {
		d.Uncapped = true
	}
	names := make([]string, len(opts.Lookups))
	for i, l := range opts.Lookups {
		names[i] = string(l)
	}
	d.StageList = strings.Join(names, ", ")
	d.Options = f.values()
	u.render(w, r, http.StatusOK, "estimate", page{Title: "Confirm the job", Nav: "new", Data: d})
}

func (u *UI) estimateFailed(w http.ResponseWriter, r *http.Request, f jobForm, err error) {
	if p, ok := problemOf(err); ok {
		u.newJobPage(w, r, http.StatusUnprocessableEntity, f, p)
		return
	}
	var tm *service.TooManyUploadsError
	if errors.As(err, &tm) {
		u.newJobPage(w, r, http.StatusTooManyRequests, f, &problem{Message: "Too many files are being read right now (" +
			tm.Message + "). Try again in a few seconds."})
		return
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		u.newJobPage(w, r, http.StatusRequestEntityTooLarge, f, &problem{Message: "The file is larger than this server takes (" +
			humanBytes(u.svc.Limits().MaxBytes) + ")."})
		return
	}
	u.fail(w, r, err)
}

// Submit starts the job the estimate's page confirmed, from the stored
// upload, and goes to its page. Its idempotency key makes a second click
// (or a reload) the same job.
func (u *UI) Submit(w http.ResponseWriter, r *http.Request) {
	p := sessionFrom(r.Context()).Principal
	f := readJobForm(r.PostForm)
	opts, err := ingest.ParseOptions(f.values(), u.svc.Limits())
	if err != nil {
		u.estimateFailed(w, r, f, err)
		return
	}
	st, _, err := u.svc.Submit(r.Context(), p, service.Submission{UploadID: r.PostForm.Get("upload_id"), Options: opts,
		IdempotencyKey: r.PostForm.Get("idempotency_key")})
	if err != nil {
		u.estimateFailed(w, r, f, err)
		return
	}
	http.Redirect(w, r, "/ui/jobs/"+st.ID, http.StatusSeeOther)
}

// formatOf is the upload format of a file, by its name, else its type.
func formatOf(filename, contentType string) (string, bool) {
	switch strings.ToLower(path.Ext(filename)) {
	case ".csv", ".txt":
		return service.FormatCSV, true
	case ".tsv", ".tab":
		return service.FormatTSV, true
	case ".xlsx":
		return service.FormatXLSX, true
	case ".json":
		return service.FormatJSON, true
	}
	switch contentType {
	case "text/csv":
		return service.FormatCSV, true
	case "text/tab-separated-values":
		return service.FormatTSV, true
	case "application/json":
		return service.FormatJSON, true
	}
	return "", false
}

func idempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "web-" + hex.EncodeToString(b[:])
}

// humanBytes says a size in the largest whole unit: "32 MiB".
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return count(n>>30) + " GiB"
	case n >= 1<<20:
		return count(n>>20) + " MiB"
	case n >= 1<<10:
		return count(n>>10) + " KiB"
	}
	return count(n) + " bytes"
}
