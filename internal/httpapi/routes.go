package httpapi

// routes is the whole HTTP surface of the API (see api.md). Every /v1 route
// needs "Authorization: Bearer <key>"; a job of another tenant is a 404.
// Unknown routes are a JSON 404 and a known route with the wrong method a
// JSON 405 (see dispatch).
func (s *server) routes() {
	s.mux.HandleFunc("GET /healthz", s.healthz) // the process is up
	s.mux.HandleFunc("GET /readyz", s.readyz)   // Postgres and Redis answer

	s.mux.Handle("POST /v1/jobs", s.authenticate(s.submitJob))              // JSON, CSV or multipart upload
	s.mux.Handle("GET /v1/jobs", s.authenticate(s.listJobs))                // newest first, ?limit=&cursor=
	s.mux.Handle("GET /v1/jobs/{id}", s.authenticate(s.getJob))             // the status body
	s.mux.Handle("GET /v1/jobs/{id}/results", s.authenticate(s.jobResults)) // ?format=json|ndjson|csv&state=&cursor=&limit=
	s.mux.Handle("POST /v1/jobs/{id}/cancel", s.authenticate(s.cancelJob))  // unclaimed rows become skipped
	s.mux.Handle("PATCH /v1/jobs/{id}", s.authenticate(s.patchJob))         // {"budget_credits": N}: raising it resumes a budget-paused job
	s.mux.Handle("GET /v1/jobs/{id}/costs", s.authenticate(s.jobCosts))     // the ledger by stage
}
