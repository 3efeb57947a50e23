package httpapi

import (
	"errors"
	"net/http"

	"github.com/enrichq/enrichq/internal/service"
)

// Watches (docs/watches.md): lists kept fresh on a schedule under a
// monthly cap, and what changed. Thin handlers over the service.

func (s *server) postWatch(w http.ResponseWriter, r *http.Request) {
	var body service.NewWatch
	if err := readJSON(w, r, maxJSONBody, "invalid_options", &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	created, err := s.svc.CreateWatch(r.Context(), principalFrom(r.Context()), body)
	if err != nil {
		s.writeError(w, r, watchNotFound(err, "no such job"))
		return
	}
	w.Header().Set("Location", "/v1/watches/"+created.Watch.ID)
	writeJSON(w, http.StatusCreated, created)
}

func (s *server) listWatches(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r.URL.Query(), service.DefaultWatchesLimit, service.MaxWatchesLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := s.svc.ListWatches(r.Context(), principalFrom(r.Context()), r.URL.Query().Get("cursor"), limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *server) getWatch(w http.ResponseWriter, r *http.Request) {
	v, err := s.svc.GetWatch(r.Context(), principalFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, watchNotFound(err, ""))
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// patchWatch is PATCH /v1/watches/{id}: {"state": "paused"|"active",
// "every": "30d", "monthly_cap_credits": N}, any of them.
func (s *server) patchWatch(w http.ResponseWriter, r *http.Request) {
	var body service.WatchPatch
	if err := readJSON(w, r, maxJSONBody, "invalid_options", &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.svc.UpdateWatch(r.Context(), principalFrom(r.Context()), r.PathValue("id"), body)
	if err != nil {
		s.writeError(w, r, watchNotFound(err, ""))
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *server) deleteWatch(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.DeleteWatch(r.Context(), principalFrom(r.Context()), r.PathValue("id")); err != nil {
		s.writeError(w, r, watchNotFound(err, ""))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// postWatchRun is POST /v1/watches/{id}/runs: {"max_age": "0s"} (optional;
// an empty body takes the watch's period). 202 with the run's job_id; the
// month's cap reached is a 409 cap_reached.
func (s *server) postWatchRun(w http.ResponseWriter, r *http.Request) {
	var body struct {
		MaxAge string `json:"max_age"`
	}
	if r.ContentLength != 0 {
		if err := readJSON(w, r, maxJSONBody, "invalid_options", &body); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	run, err := s.svc.RunWatch(r.Context(), principalFrom(r.Context()), r.PathValue("id"), body.MaxAge)
	if err != nil {
		s.writeError(w, r, watchNotFound(err, ""))
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+*run.JobID)
	writeJSON(w, http.StatusAccepted, run)
}

// watchChanges is GET /v1/watches/{id}/changes?cursor=&limit=.
func (s *server) watchChanges(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r.URL.Query(), service.DefaultChangesLimit, service.MaxChangesLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.svc.WatchChanges(r.Context(), principalFrom(r.Context()), r.PathValue("id"), r.URL.Query().Get("cursor"), limit)
	if err != nil {
		s.writeError(w, r, watchNotFound(err, ""))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, page)
}

// watchNotFound names the watch (or msg) in a 404.
func watchNotFound(err error, msg string) error {
	if errors.Is(err, service.ErrNotFound) {
		if msg == "" {
			msg = "no such watch"
		}
		return errorf(http.StatusNotFound, "not_found", "%s", msg)
	}
	return err
}
