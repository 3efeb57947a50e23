package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/enrichq/enrichq/internal/service"
)

// The bodies of the job routes are the service's views, marshalled as they are.
type (
	jobStatus  = service.JobStatus
	rowCounts  = service.RowCounts
	jobCredits = service.JobCredits
	jobList    = service.JobList
	syncStatus = service.SyncStatus // a member sync job's (platform.go)
)

func (s *server) getJob(w http.ResponseWriter, r *http.Request) {
	st, err := s.svc.JobStatus(r.Context(), principalFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, st)
}

func (s *server) cancelJob(w http.ResponseWriter, r *http.Request) {
	st, err := s.svc.Cancel(r.Context(), principalFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *server) listJobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := limitParam(q, service.DefaultJobsLimit, service.MaxJobsLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.svc.ListJobs(r.Context(), principalFrom(r.Context()), q.Get("cursor"), limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}

// limitParam reads ?limit=: def when absent, at most max (larger values are
// cut to max), a 400 when not a positive whole number.
func limitParam(q url.Values, def, max int) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, badParam("limit", "limit %q is not a whole number from 1 to %d", clip(v), max)
	}
	return n, nil
}

// clip shortens a client's value quoted back in a message.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
