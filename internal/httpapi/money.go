package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// patchJob is PATCH /v1/jobs/{id}: change a job's budget. Raising the budget
// of a job paused by it resumes the job.
func (s *server) patchJob(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	if err := dec.Decode(&body); err != nil {
		s.writeError(w, r, errorf(http.StatusBadRequest, "malformed_json", "the body must be a JSON object: %v", err))
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
		if err != nil || n < 0 {
			s.writeError(w, r, errorf(http.StatusUnprocessableEntity, "invalid_options", "budget_credits must be a whole number >= 0 or null"))
			return
		}
		budget = &n
	}
	job, err := s.Store.UpdateBudget(r.Context(), tenantFrom(r.Context()), r.PathValue("id"), budget)
	s.statuses.drop(tenantFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st, err := s.status(r, job)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// jobCosts is GET /v1/jobs/{id}/costs: what the job cost, by stage.
func (s *server) jobCosts(w http.ResponseWriter, r *http.Request) {
	job, err := s.Store.GetJob(r.Context(), tenantFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	byStage, err := s.Store.JobCosts(r.Context(), job.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if byStage == nil {
		byStage = map[domain.Stage]store.StageCost{}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"job_id": job.ID, "by_stage": byStage,
		"credits": map[string]any{"budget": job.BudgetCredits, "reserved": job.CreditsReserved, "spent": job.CreditsSpent},
	})
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
