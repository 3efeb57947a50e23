package httpapi

import (
	"io"
	"mime"
	"mime/multipart"
	"net/http"

	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/service"
)

// postUpload is POST /v1/uploads: the bodies of POST /v1/jobs, parsed and
// validated as a submit would, stored for later estimates and submits by id
// (service.Upload).
func (s *server) postUpload(w http.ResponseWriter, r *http.Request) {
	r, body, received, err := s.receiveUpload(w, r)
	defer received()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req, err := s.uploadRequest(r, body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	up, err := s.svc.Upload(r.Context(), principalFrom(r.Context()), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/uploads/"+up.ID)
	writeJSON(w, http.StatusCreated, up)
}

func (s *server) getUpload(w http.ResponseWriter, r *http.Request) {
	up, err := s.svc.GetUpload(r.Context(), principalFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, up)
}

func (s *server) deleteUpload(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.DeleteUpload(r.Context(), principalFrom(r.Context()), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// uploadRequest reads the format, options and body of an upload by its
// content type, as POST /v1/jobs does: a JSON job body, a CSV, TSV or .xlsx
// body with its options as query parameters, or multipart with a file field.
// A raw body's name may come in Content-Disposition. body is the spooled
// request body (receiveUpload).
func (s *server) uploadRequest(r *http.Request, body io.Reader) (service.UploadRequest, error) {
	ct := r.Header.Get("Content-Type")
	mediaType, params, err := mime.ParseMediaType(ct)
	if err != nil && ct != "" {
		return service.UploadRequest{}, errorf(http.StatusUnsupportedMediaType, "unsupported_media_type",
			"Content-Type %q cannot be parsed; send application/json, text/csv, text/tab-separated-values, an .xlsx or multipart/form-data", clip(ct))
	}
	lim := s.svc.Limits()
	_, disp, _ := mime.ParseMediaType(r.Header.Get("Content-Disposition"))
	switch mediaType {
	case "application/json":
		if len(r.URL.Query()) > 0 {
			return service.UploadRequest{}, errorf(http.StatusUnprocessableEntity, ingest.CodeInvalidOptions,
				"a JSON upload takes its options in the body, not as query parameters")
		}
		return service.UploadRequest{Format: service.FormatJSON, Filename: disp["filename"], Body: body}, nil
	case mediaCSV, mediaTSV, mediaXLSX:
		opts, err := ingest.ParseOptions(r.URL.Query(), lim)
		if err != nil {
			return service.UploadRequest{}, err
		}
		return service.UploadRequest{Format: uploadFormat(mediaType), Filename: disp["filename"], Options: opts, Body: body}, nil
	case "multipart/form-data":
		opts, err := ingest.ParseOptions(r.URL.Query(), lim)
		if err != nil {
			return service.UploadRequest{}, err
		}
		if params["boundary"] == "" {
			return service.UploadRequest{}, errorf(http.StatusBadRequest, "malformed_multipart", "multipart/form-data without a boundary")
		}
		file, err := filePart(multipart.NewReader(body, params["boundary"]))
		if err != nil {
			return service.UploadRequest{}, err
		}
		return service.UploadRequest{Format: uploadFormat(partMediaType(file)), Filename: file.FileName(), Options: opts, Body: file}, nil
	}
	return service.UploadRequest{}, errorf(http.StatusUnsupportedMediaType, "unsupported_media_type",
		"Content-Type %q is not supported; send application/json, text/csv or text/tab-separated-values (options as query parameters), %s for an .xlsx, or multipart/form-data with a file field",
		clip(mediaType), mediaXLSX)
}

func uploadFormat(mediaType string) string {
	switch mediaType {
	case mediaTSV:
		return service.FormatTSV
	case mediaXLSX:
		return service.FormatXLSX
	}
	return service.FormatCSV
}

// uploadEstimate is the answer of a dry run by upload id: the estimate and
// what the stored upload held (its distinct lookups are the estimate's).
func (s *server) uploadEstimate(r *http.Request, est estimateBody, id string) (estimateBody, error) {
	up, err := s.svc.GetUpload(r.Context(), principalFrom(r.Context()), id)
	if err != nil {
		return estimateBody{}, err
	}
	rows, distinct := up.Rows, est.Distinct
	est.UploadFields = service.UploadFields{RowsUploaded: &rows, DistinctLookups: &distinct, Columns: up.Columns, ExtraColumns: up.ExtraColumns}
	return est, nil
}
