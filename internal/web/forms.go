package web

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"

	"github.com/enrichq/enrichq/internal/domain"
)

// The page's forms are read so that nothing of them reaches a temporary
// file: net/http removes the files of a multipart form only from the
// request the server made, never from the copies middleware hands on (a
// request with a new context), so a spilled file part would stay on disk.
// A form of a few fields must be urlencoded; the new-job form, the only one
// with a file, is read part by part as it arrives (UploadForm), its file
// handed to the handler as a stream, after the form's CSRF token.

const (
	// formSlack is what a form may carry beside a file: the fields of a
	// form, all of them, and an upload's multipart framing.
	formSlack = 64 << 10
	// maxFormParts bounds the parts of an upload form (the new-job form
	// has about ten).
	maxFormParts = 100
)

var (
	// errFormTooLarge: the fields of a form are larger than formSlack.
	errFormTooLarge = errors.New("web: the form's fields are too large")
	// errBadForm: the form is not what the page sends.
	errBadForm = errors.New("web: the form could not be read")
)

// readForm reads a form of a few fields, urlencoded as the page's forms
// are, at most formSlack; otherwise it has answered. Any other body
// (multipart above all) is refused before a byte of it is read.
func (u *UI) readForm(w http.ResponseWriter, r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/x-www-form-urlencoded" {
		u.formFailed(w, r, http.StatusUnsupportedMediaType, errBadForm)
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, formSlack)
	if err := r.ParseForm(); err != nil {
		u.formFailed(w, r, 0, err)
		return false
	}
	return true
}

// formFailed answers a form that could not be read: too large (the file
// or the fields) or not the page's; status, when not 0, overrides the
// status of a form not understood.
func (u *UI) formFailed(w http.ResponseWriter, r *http.Request, status int, err error) {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		u.render(w, r, http.StatusRequestEntityTooLarge, "error", page{Title: "File too large",
			Data: "The file is larger than this server takes (" + humanBytes(u.svc.Limits().MaxBytes) + "). Split it and send the parts as separate jobs."})
	case errors.Is(err, errFormTooLarge):
		u.render(w, r, http.StatusRequestEntityTooLarge, "error", page{Title: "Form too large",
			Data: "The form's fields are larger than this page sends. Send it again from the page."})
	default:
		if status == 0 {
			status = http.StatusBadRequest
		}
		u.render(w, r, status, "error", page{Title: "Bad form", Data: "The form could not be read: send it again from the page."})
	}
}

// uploadForm is a multipart form with one file, read as it arrives: the
// fields before the file, then the file as a stream (File), then, when
// Fields is called, the fields after it.
type uploadForm struct {
	// File is the file part, nil when the form has none; read it before
	// calling Fields.
	File *multipart.Part
	mr   *multipart.Reader
	// fields and the bytes and parts they took, counted against
	// formSlack and maxFormParts.
	fields       url.Values
	bytes, parts int
	sawFile      bool // the file part came (File may be read already)
	done         bool // the form's end was read
}

// UploadForm is Form for a form with a file: the multipart body is read
// part by part, never spilled to a temporary file. The fields before the
// file are read, and the CSRF token among them checked, before next gets
// the form with its file unread: a forged form is refused before its file
// is received. The page's own form puts the token first.
func (u *UI) UploadForm(scope domain.Scope, next func(http.ResponseWriter, *http.Request, *uploadForm)) http.Handler {
	return u.Page(scope, func(w http.ResponseWriter, r *http.Request) {
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if mt != "multipart/form-data" {
			u.formFailed(w, r, http.StatusUnsupportedMediaType, errBadForm)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, u.svc.Limits().MaxBytes+formSlack)
		mr, err := r.MultipartReader() // also stops a later ParseMultipartForm of this request
		if err != nil {
			u.formFailed(w, r, 0, err)
			return
		}
		f := &uploadForm{mr: mr, fields: url.Values{}}
		if err := f.readFields(); err != nil {
			u.formFailed(w, r, 0, err)
			return
		}
		if !u.checkCSRF(w, r, f.fields.Get(csrfField), sessionFrom(r.Context()).CSRFToken) {
			return
		}
		next(w, r, f)
	})
}

// Fields reads the rest of the form, skipping what is left of the file,
// and returns every field (not the file). An error says the form could
// not be read: too large, or not the page's.
func (f *uploadForm) Fields() (url.Values, error) {
	f.File = nil // NextPart skips what is left of it
	if err := f.readFields(); err != nil {
		return nil, err
	}
	return f.fields, nil
}

// readFields reads fields up to the form's file (set as File) or its end.
func (f *uploadForm) readFields() error {
	for !f.done {
		p, err := f.mr.NextPart()
		if err == io.EOF {
			f.done = true
			return nil
		}
		if err != nil {
			return formError(err)
		}
		if f.parts++; f.parts > maxFormParts {
			return errFormTooLarge
		}
		if p.FileName() != "" || p.FormName() == "file" {
			if p.FormName() != "file" || f.sawFile {
				return errBadForm // a file the page does not send
			}
			f.sawFile = true
			if p.FileName() == "" {
				continue // the file input left empty: no file
			}
			f.File = p
			return nil
		}
		if p.FormName() == "" {
			return errBadForm
		}
		v, err := io.ReadAll(io.LimitReader(p, int64(formSlack-f.bytes+1)))
		if err != nil {
			return formError(err)
		}
		if f.bytes += len(v) + len(p.FormName()); f.bytes > formSlack {
			return errFormTooLarge
		}
		f.fields.Add(p.FormName(), string(v))
	}
	return nil
}

// formError keeps a body too large as it is and makes anything else a
// form not understood.
func formError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	return errors.Join(errBadForm, err)
}

// removeFormFiles removes the temporary files of a multipart form parsed on
// r, should a handler ever parse one: net/http removes only those of the
// request it made, and the handlers get a copy (a request with a new
// context). The page's own forms never spill to a file (readForm,
// UploadForm).
func removeFormFiles(r *http.Request) {
	if r.MultipartForm != nil {
		_ = r.MultipartForm.RemoveAll()
	}
}
