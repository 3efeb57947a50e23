package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// patchJob is PATCH /v1/jobs/{id}: change a job's budget. Raising the budget
// of a job paused by it resumes the job.
func (s *server) patchJob(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	if err := readJSON(w, r, maxJSONBody, "malformed_json", &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	raw, ok := body["budget_credits"]
	if !ok || len(body) != 1 {
		s.writeError(w, r, errorf(http.StatusUnprocessableEntity, "invalid_options", `send {"budget_credits": N} (or null for no budget); nothing else can change`))
		return
	}
	var budget *int64
	if string(raw) != "null" {
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			s.writeError(w, r, errorf(http.StatusUnprocessableEntity, "invalid_options", "budget_credits must be a whole number >= 0 or null"))
			return
		}
		budget = &n
	}
	st, err := s.svc.SetBudget(r.Context(), principalFrom(r.Context()), r.PathValue("id"), budget)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// jobCosts is GET /v1/jobs/{id}/costs: what the job cost, by stage.
func (s *server) jobCosts(w http.ResponseWriter, r *http.Request) {
	costs, err := s.svc.Costs(r.Context(), principalFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, costs)
}

// dryRun reports whether ?dry_run=true was asked, and removes the parameter
// so the job options parse as usual.
func dryRun(r *http.Request) (bool, error) {
	q := r.URL.Query()
	vals, ok := q["dry_run"]
	if !ok {
		return false, nil
	}
	q.Del("dry_run")
	r.URL.RawQuery = q.Encode()
	if len(vals) != 1 {
		return false, errorf(http.StatusBadRequest, "invalid_parameter", "dry_run is given %d times", len(vals))
	}
	b, err := strconv.ParseBool(vals[0])
	if err != nil {
		return false, errorf(http.StatusBadRequest, "invalid_parameter", "dry_run must be true or false")
	}
	return b, nil
}
