package httpapi

import "github.com/enrichq/enrichq/internal/domain"

// routes is the whole HTTP surface of the API (see api.md). Every /v1 route
// needs "Authorization: Bearer <key>" of a key holding the route's scope
// (read, submit or admin: api.md, "Scopes"); a job of another tenant is a 404.
// Unknown routes are a JSON 404 and a known route with the wrong method a
// JSON 405 (see dispatch).
func (s *server) routes() {
	const scopeRead, scopeSubmit, scopeAdmin = domain.ScopeRead, domain.ScopeSubmit, domain.ScopeAdmin
	const scopeAny domain.Scope = "" // authenticate: a known key, whatever its scopes

	s.mux.HandleFunc("GET /healthz", s.openRoute(s.healthz)) // the process is up
	s.mux.HandleFunc("GET /readyz", s.openRoute(s.readyz))   // Postgres and Redis answer

	s.mux.HandleFunc("GET /openapi.json", s.openRoute(s.openAPI)) // the OpenAPI 3 document of this API (no key needed)

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

	// Watches (watches.go, docs/watches.md): a finished job's inputs enriched again every period under a monthly cap.
	s.mux.Handle("POST /v1/watches", s.authenticate(scopeSubmit, s.postWatch))              // {"job_id","every","monthly_cap_credits","lookups"}: 201 with a month's estimate
	s.mux.Handle("GET /v1/watches", s.authenticate(scopeRead, s.listWatches))               // newest first, ?limit=&cursor=
	s.mux.Handle("GET /v1/watches/{id}", s.authenticate(scopeRead, s.getWatch))             // with this month's spend
	s.mux.Handle("PATCH /v1/watches/{id}", s.authenticate(scopeSubmit, s.patchWatch))       // {"state": "paused"|"active", "every", "monthly_cap_credits"}
	s.mux.Handle("DELETE /v1/watches/{id}", s.authenticate(scopeSubmit, s.deleteWatch))     // 204; its runs' jobs stay
	s.mux.Handle("POST /v1/watches/{id}/runs", s.authenticate(scopeSubmit, s.postWatchRun)) // {"max_age": "0s"}: a run now, 202 with its job_id
	s.mux.Handle("GET /v1/watches/{id}/changes", s.authenticate(scopeRead, s.watchChanges)) // ?cursor=&limit=: what changed, oldest first

	s.mux.Handle("GET /v1/results", s.authenticate(scopeRead, s.resultsFeed)) // every job's results in commit order, ?since=&limit= (feed.go)
	s.mux.Handle("GET /v1/vendors", s.authenticate(scopeRead, s.listVendors)) // the vendors, their rates per segment and stage, the automatic order

	// MCP for AI assistants (mcp.go, docs/mcp.md): Streamable HTTP, stateless. Any scope gets in; the
	// tools offered follow the key's scopes (read: status, list, results; submit: estimate, submit, cancel, raise).
	s.mux.Handle("POST /mcp", s.authenticate(scopeAny, s.mcp))
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

	// The web page (internal/web, docs/web.md): HTML for a person signed in with a key. Its session is a
	// cookie, not a bearer token; a page without one sends to /ui/signin, and every form carries a CSRF token.
	s.mux.Handle("GET /{$}", s.ui.Open(s.ui.Home))                                          // to the jobs, or to sign in
	s.mux.Handle("GET /ui/static/{file}", s.ui.Open(s.ui.Static))                           // the stylesheet and the script
	s.mux.Handle("GET /ui/signin", s.ui.Open(s.ui.SignInPage))                              // the sign-in form
	s.mux.Handle("POST /ui/signin", s.ui.Open(s.ui.SignIn))                                 // an API key becomes a session
	s.mux.Handle("POST /ui/signout", s.ui.Form("", s.ui.SignOut))                           // the session ends, whatever its key's scopes
	s.mux.Handle("GET /ui/jobs", s.ui.Page(scopeRead, s.ui.Jobs))                           // the tenant's jobs, newest first
	s.mux.Handle("GET /ui/jobs/new", s.ui.Page(scopeSubmit, s.ui.NewJob))                   // the new-job form
	s.mux.Handle("POST /ui/jobs/new", s.ui.UploadForm(scopeSubmit, s.ui.Estimate))          // the file is stored and priced; confirm the amount
	s.mux.Handle("POST /ui/jobs/submit", s.ui.Form(scopeSubmit, s.ui.Submit))               // the confirmed job starts
	s.mux.Handle("GET /ui/jobs/{id}", s.ui.Page(scopeRead, s.ui.Job))                       // a job: progress, credits, results
	s.mux.Handle("GET /ui/jobs/{id}/status", s.ui.Page(scopeRead, s.ui.JobStatus))          // its live figures, polled by the page
	s.mux.Handle("GET /ui/jobs/{id}/results", s.ui.Page(scopeRead, s.webResults))           // ?format=csv|ndjson: the download, as GET /v1/jobs/{id}/results
	s.mux.Handle("POST /ui/jobs/{id}/budget", s.ui.Form(scopeSubmit, s.ui.RaiseBudget))     // raising it resumes a budget-paused job
	s.mux.Handle("POST /ui/jobs/{id}/resume", s.ui.Form(scopeSubmit, s.ui.Resume))          // a job paused by an allowance or the vendor
	s.mux.Handle("POST /ui/jobs/{id}/cancel", s.ui.Form(scopeSubmit, s.ui.Cancel))          // unclaimed rows become skipped
	s.mux.Handle("GET /ui/vendors", s.ui.Page(scopeRead, s.ui.Vendors))                     // spend per vendor this month, found of asked, the order in use
	s.mux.Handle("GET /ui/watches", s.ui.Page(scopeRead, s.ui.Watches))                     // the tenant's watches and the form that makes one
	s.mux.Handle("POST /ui/watches/estimate", s.ui.Form(scopeSubmit, s.ui.EstimateWatch))   // the month's estimate; confirm the amount
	s.mux.Handle("POST /ui/watches", s.ui.Form(scopeSubmit, s.ui.CreateWatch))              // the confirmed watch is made
	s.mux.Handle("GET /ui/watches/{id}", s.ui.Page(scopeRead, s.ui.Watch))                  // a watch: its month, actions, changes
	s.mux.Handle("POST /ui/watches/{id}/run", s.ui.Form(scopeSubmit, s.ui.RunWatch))        // a run now, within the month's cap
	s.mux.Handle("POST /ui/watches/{id}/state", s.ui.Form(scopeSubmit, s.ui.SetWatchState)) // pause or resume
	s.mux.Handle("POST /ui/watches/{id}/delete", s.ui.Form(scopeSubmit, s.ui.DeleteWatch))  // the watch and its changes go
	s.mux.Handle("GET /ui/members", s.ui.Page(scopeRead, s.ui.Members))                     // the platform's members: connected, to reconnect
	s.mux.Handle("GET /ui/members/connect", s.ui.Page(scopeSubmit, s.ui.Connect))           // 303 to the platform's consent screen
}
