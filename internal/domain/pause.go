package domain

// PauseCause is why a job is paused (jobs.paused_by); each cause has its own
// way back (docs/money.md, "Paused jobs").
type PauseCause string

// The pause causes.
const (
	// PausedByJobBudget: the job's budget ran out. Raising it (PATCH) resumes the job.
	PausedByJobBudget PauseCause = "job_budget"
	// PausedByAllowance: a monthly allowance ran out, the tenant's or the
	// vendor key's. The job resumes on the 1st of the next month (UTC), or
	// when the tenant's allowance is raised, or on demand.
	PausedByAllowance PauseCause = "allowance"
	// PausedByVendorAccess: the vendor refused the key (401) or the plan
	// (403). The job resumes on demand (POST /v1/jobs/{id}/resume, or
	// `api jobs resume-vendor-paused`) once the key is fixed.
	PausedByVendorAccess PauseCause = "vendor_access"
	// PausedByPlatform: a member sync stopped on the platform's side (a
	// retired version, the token key); it has its own resume route.
	PausedByPlatform PauseCause = "platform"
)
