package httpapi

import (
	"errors"
	"net/http"

	"github.com/enrichq/enrichq/internal/service"
)

// postErasure is POST /v1/erasures: {"email"} | {"profile_url"} | {"name",
// "company"} | {"name", "domain"}. 201 with the receipt.
func (s *server) postErasure(w http.ResponseWriter, r *http.Request) {
	var req service.ErasureRequest
	if err := readJSON(w, r, maxJSONBody, "malformed_json", &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.svc.Erase(r.Context(), principalFrom(r.Context()), req)
	if errors.Is(err, service.ErrErasureNotConfigured) {
		err = errorf(http.StatusServiceUnavailable, "erasure_not_configured", "%s", err.Error())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/erasures/"+e.ID)
	writeJSON(w, http.StatusCreated, e)
}

// listErasures is GET /v1/erasures: the tenant's erasures, newest first.
func (s *server) listErasures(w http.ResponseWriter, r *http.Request) {
	list, err := s.svc.Erasures(r.Context(), principalFrom(r.Context()))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"erasures": list})
}

// liftErasure is DELETE /v1/erasures/{id}: the suppression is lifted (what
// was removed stays removed); the erasure with its lifted_at.
func (s *server) liftErasure(w http.ResponseWriter, r *http.Request) {
	e, err := s.svc.LiftErasure(r.Context(), principalFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}
