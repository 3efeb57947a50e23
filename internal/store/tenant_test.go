package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// A key's creation makes its tenant; a key carries its scopes (read and
// submit unless told), and only live keys are found.
func TestTenantsAndKeyScopes(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	if _, err := st.GetTenant(ctx, "acme"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("tenant before any key: %v", err)
	}
	k, key, err := st.CreateAPIKey(ctx, " acme ", "etl", nil)
	if err != nil || k.Tenant != "acme" || !slices.Equal(k.Scopes, domain.DefaultKeyScopes) {
		t.Fatalf("create: %+v, %v", k, err)
	}
	tn, err := st.GetTenant(ctx, "acme")
	if err != nil || tn.CreatedAt.IsZero() {
		t.Fatalf("tenant after its first key: %+v, %v", tn, err)
	}
	again, err := st.EnsureTenant(ctx, "acme")
	if err != nil || !again.CreatedAt.Equal(tn.CreatedAt) {
		t.Fatalf("EnsureTenant of an existing tenant: %+v, %v; want created at %v", again, err, tn.CreatedAt)
	}
	read, readKey, err := st.CreateAPIKey(ctx, "acme", "", []domain.Scope{domain.ScopeRead})
	if err != nil || !slices.Equal(read.Scopes, []domain.Scope{domain.ScopeRead}) {
		t.Fatalf("create a read key: %+v, %v", read, err)
	}
	if _, _, err := st.CreateAPIKey(ctx, "acme", "", []domain.Scope{"root"}); err == nil {
		t.Fatal("a key of an unknown scope was created")
	}
	if _, err := st.EnsureTenant(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CreateAPIKey(ctx, "beta", "", []domain.Scope{domain.ScopeRead, domain.ScopeSubmit, domain.ScopeAdmin}); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		key    string
		scopes []domain.Scope
	}{{key, domain.DefaultKeyScopes}, {readKey, []domain.Scope{domain.ScopeRead}}} {
		for range 2 { // the second is within the minute: not stamped again, still found
			got, ok, err := st.LiveAPIKey(ctx, c.key)
			if err != nil || !ok || got.Tenant != "acme" || !slices.Equal(got.Scopes, c.scopes) || got.LastUsedAt == nil {
				t.Fatalf("LiveAPIKey: %+v, %v, %v", got, ok, err)
			}
		}
	}
	if err := st.RevokeAPIKey(ctx, read.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.LiveAPIKey(ctx, readKey); ok || err != nil {
		t.Fatalf("a revoked key: ok %v, %v", ok, err)
	}
	if _, ok, err := st.LiveAPIKey(ctx, "eq_unknown"); ok || err != nil {
		t.Fatalf("an unknown key: ok %v, %v", ok, err)
	}

	acmeKeys, err := st.ListAPIKeys(ctx, "acme")
	if err != nil || len(acmeKeys) != 2 {
		t.Fatalf("acme's keys: %d, %v", len(acmeKeys), err)
	}
	all, err := st.AllAPIKeys(ctx)
	if err != nil || len(all) != 3 || !slices.Equal(all[0].Scopes, domain.Scopes) {
		t.Fatalf("every key: %+v, %v", all, err)
	}
}

// Every method that takes a tenant refuses an empty one: none reads it as
// "every tenant", none stores it.
func TestEmptyTenantRefused(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	job := createJob(t, st, store.NewJob{}, 2)
	now := time.Now()
	for name, err := range map[string]error{
		"GetJob":       func() error { _, err := st.GetJob(ctx, "", job.ID); return err }(),
		"GetJobStatus": func() error { _, _, err := st.GetJobStatus(ctx, "", job.ID); return err }(),
		"ListJobs":     func() error { _, err := st.ListJobs(ctx, "", nil, 10); return err }(),
		"CancelJob":    func() error { _, err := st.CancelJob(ctx, "", job.ID); return err }(),
		"UpdateBudget": func() error { _, err := st.UpdateBudget(ctx, "", job.ID, ptr[int64](1)); return err }(),
		"CreateJob": func() error {
			_, _, err := st.CreateJob(ctx, store.NewJob{ChunkSize: 10}, func(func(store.NewRow) error) error { return nil })
			return err
		}(),
		"ResultsFeed": func() error { _, err := st.ResultsFeed(ctx, "", 0, 10); return err }(),
		"CachedAnswers": func() error {
			_, err := st.CachedAnswers(ctx, "", domain.StageProfile, []string{"k"}, now.Add(-time.Hour))
			return err
		}(),
		"ClaimLookups": func() error {
			_, err := st.ClaimLookups(ctx, "", domain.StageProfile, []string{"k"}, "00000000-0000-0000-0000-000000000001", time.Minute)
			return err
		}(),
		"SaveOutcomes": func() error {
			_, err := st.SaveOutcomes(ctx, "", "00000000-0000-0000-0000-000000000001", []store.Outcome{{RowID: 1, State: domain.RowMatched}}, nil)
			return err
		}(),
		"GetPlatformMember":   func() error { _, err := st.GetPlatformMember(ctx, "", job.ID); return err }(),
		"ListPlatformMembers": func() error { _, err := st.ListPlatformMembers(ctx, "", store.MemberFilter{}); return err }(),
		"IsPlatformSync":      func() error { _, err := st.IsPlatformSync(ctx, "", job.ID); return err }(),
		"UpsertPlatformMember": func() error {
			_, err := st.UpsertPlatformMember(ctx, store.ConnectedMember{MemberID: "m1", At: now})
			return err
		}(),
		"SaveConnectState": func() error { return st.SaveConnectState(ctx, []byte("h"), "", []byte("v"), now, now.Add(time.Minute)) }(),
		"CreatePlatformSync": func() error {
			_, _, err := st.CreatePlatformSync(ctx, store.NewPlatformSync{All: true, ChunkSize: 10})
			return err
		}(),
		"CreateAPIKey": func() error { _, _, err := st.CreateAPIKey(ctx, " ", "", nil); return err }(),
		"ListAPIKeys":  func() error { _, err := st.ListAPIKeys(ctx, ""); return err }(),
		"EnsureTenant": func() error { _, err := st.EnsureTenant(ctx, ""); return err }(),
		"GetTenant":    func() error { _, err := st.GetTenant(ctx, ""); return err }(),
	} {
		if !errors.Is(err, store.ErrNoTenant) {
			t.Errorf("%s with an empty tenant: %v, want ErrNoTenant", name, err)
		}
	}
	// The internal read by id still finds the job, and nothing changed.
	j, err := st.JobByID(ctx, job.ID)
	if err != nil || j.Tenant != "acme" || j.State != domain.JobQueued || j.BudgetCredits != nil {
		t.Fatalf("JobByID: %+v, %v", j, err)
	}
	if jobsN, _ := storetest.JobsAndRows(t, st); jobsN != 1 {
		t.Fatalf("%d jobs, want 1", jobsN)
	}
}

// The schema says it too: every table with a tenant column checks that it
// is not empty, and tenants' own ids are never empty.
func TestEveryTenantColumnRefusesEmpty(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	pool := store.PoolForTest(st)
	rows, err := pool.Query(ctx, `
		SELECT c.table_name::text, coalesce(bool_or(pg_get_constraintdef(k.oid) LIKE '%' || c.column_name || ' <> ''''::text%'), false)
		FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
		LEFT JOIN pg_constraint k ON k.conrelid = (quote_ident(c.table_schema) || '.' || quote_ident(c.table_name))::regclass AND k.contype = 'c'
		WHERE c.table_schema = 'public' AND (c.column_name = 'tenant' OR (c.table_name = 'tenants' AND c.column_name = 'id'))
		GROUP BY c.table_name ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var table string
		var checked bool
		if err := rows.Scan(&table, &checked); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, table)
		if !checked {
			t.Errorf("table %s has a tenant column without a CHECK that it is not empty", table)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"api_keys", "jobs", "lookup_cache", "tenants"} {
		if !slices.Contains(tables, want) {
			t.Errorf("tables with a tenant: %v, want %s among them", tables, want)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO jobs (tenant, lookups, source_format) VALUES ('', '{profile}', 'json')`); err == nil ||
		!strings.Contains(err.Error(), "jobs_tenant_check") {
		t.Errorf("a job of an empty tenant: %v, want the CHECK's refusal", err)
	}
}
