package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/enrichq/enrichq/internal/service"
)

// getAccount is GET /v1/account: the tenant's limits and this month's credits.
func (s *server) getAccount(w http.ResponseWriter, r *http.Request) {
	a, err := s.svc.Account(r.Context(), principalFrom(r.Context()))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// patchAccount is PATCH /v1/account: {"default_job_budget": N|null,
// "monthly_allowance": N|null, "retention": "30d"|null}, any of them. The
// retention is checked before anything changes.
func (s *server) patchAccount(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	if err := readJSON(w, r, maxJSONBody, "malformed_json", &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	var l service.AccountLimits
	var retention *time.Duration
	retentionSet := false
	for k, raw := range body {
		var dst *service.Limit
		switch k {
		case "default_job_budget":
			dst = &l.DefaultJobBudget
		case "monthly_allowance":
			dst = &l.MonthlyAllowance
		case "retention":
			var v *string
			if err := json.Unmarshal(raw, &v); err != nil {
				s.writeError(w, r, errorf(http.StatusUnprocessableEntity, "invalid_options", `retention must be a window like "30d" or "720h", or null for none`))
				return
			}
			if v != nil {
				d, err := service.ParseRetention(*v)
				if err != nil {
					s.writeError(w, r, err)
					return
				}
				retention = d
			}
			retentionSet = true
			continue
		default:
			s.writeError(w, r, errorf(http.StatusUnprocessableEntity, "invalid_options",
				"%q cannot change: send default_job_budget, monthly_allowance (a whole number >= 0, or null for none) or retention (\"30d\", or null)", k))
			return
		}
		dst.Set = true
		if string(raw) != "null" {
			n, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				s.writeError(w, r, errorf(http.StatusUnprocessableEntity, "invalid_options", "%s must be a whole number >= 0 or null", k))
				return
			}
			dst.Value = &n
		}
	}
	p := principalFrom(r.Context())
	var a service.Account
	var err error
	// The limits first: the retention was checked above, so it cannot fail on its value after them.
	if l.DefaultJobBudget.Set || l.MonthlyAllowance.Set || !retentionSet {
		if a, err = s.svc.SetAccountLimits(r.Context(), p, l); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if retentionSet {
		if a, err = s.svc.SetRetention(r.Context(), p, retention); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, a)
}

// rotateWebhookSecret is POST /v1/account/webhook-secret: a new webhook
// secret for the tenant, shown in this answer only.
func (s *server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) {
	sec, err := s.svc.RotateWebhookSecret(r.Context(), principalFrom(r.Context()))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, sec)
}

// resumeJob is POST /v1/jobs/{id}/resume: a job paused by the vendor's
// refusal or by an allowance goes on.
func (s *server) resumeJob(w http.ResponseWriter, r *http.Request) {
	st, err := s.svc.Resume(r.Context(), principalFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
