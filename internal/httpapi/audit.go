package httpapi

import (
	"net/http"
	"strconv"

	"github.com/enrichq/enrichq/internal/service"
)

// auditLog is GET /v1/audit?since=SEQ&limit=N: the tenant's audit log after
// line since, oldest first; next_since is the position to ask for next.
func (s *server) auditLog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var since int64
	if v := q.Get("since"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.writeError(w, r, badParam("since", "since %q is not an audit position (a whole number >= 0)", clip(v)))
			return
		}
		since = n
	}
	limit, err := limitParam(q, service.DefaultAuditLimit, service.MaxAuditLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.svc.Audit(r.Context(), principalFrom(r.Context()), since, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}
