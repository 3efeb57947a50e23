package httpapi

import (
	"context"
	"net/http"

	"github.com/enrichq/enrichq/internal/web"
)

// webResults is the web page's download of a job's results: the very
// answer of GET /v1/jobs/{id}/results (csv or ndjson, every row), for the
// principal of the page's session, as a file to save.
func (s *server) webResults(w http.ResponseWriter, r *http.Request) {
	p, ok := web.PrincipalFrom(r.Context())
	if !ok {
		s.ui.NotFound(w, r)
		return
	}
	id := r.PathValue("id")
	if _, err := s.svc.JobStatus(r.Context(), p, id); err != nil {
		s.ui.NotFound(w, r) // another tenant's job is not found, as any unknown one
		return
	}
	ext := ""
	switch r.URL.Query().Get("format") {
	case "csv":
		ext = "csv"
	case "ndjson":
		ext = "jsonl"
	default:
		http.Error(w, "format must be csv or ndjson", http.StatusBadRequest)
		return
	}
	q := r.URL.Query()
	q.Del("limit") // the whole file
	r.URL.RawQuery = q.Encode()
	w.Header().Set("Content-Disposition", `attachment; filename="enrichq-`+id+`.`+ext+`"`)
	s.jobResults(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
}
