package httpapi

import "github.com/enrichq/enrichq/internal/domain"

// routes is the whole HTTP surface of the API (see api.md). Every /v1 route
// needs "Authorization: Bearer <key>" of a key holding the route's scope
// (read, submit or admin: api.md, "Scopes"); a job of another tenant is a 404.
// Unknown routes are a JSON 404 and a known route with the wrong method a
// JSON 405 (see dispatch).
func (s *server) routes() {
	const scopeRead, scopeSubmit, scopeAdmin = domain.ScopeRead, domain.ScopeSubmit, domain.ScopeAdmin

	s.mux.HandleFunc("GET /healthz", s.healthz) // the process is up
	s.mux.HandleFunc("GET /readyz", s.readyz)   // Postgres and Redis answer

	s.mux.HandleFunc("GET /openapi.json", s.openAPI) // the OpenAPI 3 document of this API (no key needed)

	s.mux.Handle("POST /v1/jobs", s.authenticate(scopeSubmit, s.submitJob))             // JSON, CSV or multipart upload
	s.mux.Handle("GET /v1/jobs", s.authenticate(scopeRead, s.listJobs))                 // newest first, ?limit=&cursor=
	s.mux.Handle("GET /v1/jobs/{id}", s.authenticate(scopeRead, s.getJob))              // the status body
	s.mux.Handle("GET /v1/jobs/{id}/results", s.authenticate(scopeRead, s.jobResults))  // ?format=json|ndjson|csv&state=&cursor=&limit=
	s.mux.Handle("POST /v1/jobs/{id}/cancel", s.authenticate(scopeSubmit, s.cancelJob)) // unclaimed rows become skipped
	s.mux.Handle("PATCH /v1/jobs/{id}", s.authenticate(scopeSubmit, s.patchJob))        // {"budget_credits": N}: raising it resumes a budget-paused job
	s.mux.Handle("GET /v1/jobs/{id}/costs", s.authenticate(scopeRead, s.jobCosts))      // the ledger by stage
	s.mux.Handle("POST /v1/jobs/{id}/resume", s.authenticate(scopeSubmit, s.resumeJob)) // a job paused by the vendor's refusal or an allowance (account.go)

	// The tenant's account (account.go): limits, this month's credits, the webhook secret.
	s.mux.Handle("GET /v1/account", s.authenticate(scopeRead, s.getAccount))                           // limits, spent and reserved this month
	s.mux.Handle("PATCH /v1/account", s.authenticate(scopeAdmin, s.patchAccount))                      // {"default_job_budget": N|null, "monthly_allowance": N|null, "retention": "30d"|null}
	s.mux.Handle("POST /v1/account/webhook-secret", s.authenticate(scopeAdmin, s.rotateWebhookSecret)) // a new secret, shown once

	s.mux.Handle("POST /v1/uploads", s.authenticate(scopeSubmit, s.postUpload))          // a file kept for estimates and submits by id (uploads.go)
	s.mux.Handle("GET /v1/uploads/{id}", s.authenticate(scopeRead, s.getUpload))         // what it held, until when it is kept
	s.mux.Handle("DELETE /v1/uploads/{id}", s.authenticate(scopeSubmit, s.deleteUpload)) // 204

	s.mux.Handle("GET /v1/results", s.authenticate(scopeRead, s.resultsFeed)) // every job's results in commit order, ?since=&limit= (feed.go)

	// Personal data (docs/personal-data.md): erasure of one person, the audit trail.
	s.mux.Handle("POST /v1/erasures", s.authenticate(scopeAdmin, s.postErasure))        // {"email"}|{"profile_url"}|{"name","company"|"domain"}: 201 with the receipt
	s.mux.Handle("GET /v1/erasures", s.authenticate(scopeAdmin, s.listErasures))        // newest first
	s.mux.Handle("DELETE /v1/erasures/{id}", s.authenticate(scopeAdmin, s.liftErasure)) // lifts the suppression
	s.mux.Handle("GET /v1/audit", s.authenticate(scopeRead, s.auditLog))                // ?since=&limit=: downloads, feed reads, erasures, purges, key and budget changes

	// The platform's own API (platform.go): connected members only; a profile URL is a 422 (cold lookups go to the vendor).
	s.mux.Handle("GET /v1/platform/connect", s.authenticate(scopeSubmit, s.platformConnect))              // 302 to the consent screen (PKCE, state kept server-side)
	s.mux.HandleFunc("GET /v1/platform/callback", s.platformCallback)                                     // the consent screen's redirect; no key: the state names the tenant
	s.mux.Handle("GET /v1/platform/members", s.authenticate(scopeRead, s.platformMembers))                // ?expiring_within=7d&status=&limit=&cursor=
	s.mux.Handle("GET /v1/platform/members/{id}", s.authenticate(scopeRead, s.platformMember))            // one member, never its token
	s.mux.Handle("GET /v1/platform/profile", s.authenticate(scopeRead, s.platformProfile))                // ?member=ID: the last profile read; ?profile_url= is a 422
	s.mux.Handle("POST /v1/platform/sync", s.authenticate(scopeSubmit, s.platformSync))                   // {"members": [ids] | "all"}: a member sync job
	s.mux.Handle("GET /v1/platform/sync/{id}", s.authenticate(scopeRead, s.platformSyncStatus))           // the status body and next_attempt_at
	s.mux.Handle("POST /v1/platform/sync/{id}/resume", s.authenticate(scopeSubmit, s.platformSyncResume)) // after a retired version: go on with the newer one
}
