package httpapi

import "net/http"

// listVendors is GET /v1/vendors: the configured vendors, what each
// answered per segment and stage, and the automatic order per segment.
func (s *server) listVendors(w http.ResponseWriter, r *http.Request) {
	v, err := s.svc.Vendors(r.Context(), principalFrom(r.Context()))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
