package store_test

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// people is a job of one row of each input kind, every row matched with a
// profile (and an email for the profile_url row), its answers cached.
func people(t *testing.T, st *store.Store, tenant string) store.Job {
	t.Helper()
	ctx := context.Background()
	in := []store.NewRow{
		{InputRow: 1, Ref: "url", Kind: domain.InputProfileURL, ProfileURL: "https://platform.example/in/ada-lane"},
		{InputRow: 2, Ref: "email", Kind: domain.InputEmail, Email: "bo.park@park.example"},
		{InputRow: 3, Ref: "nc", Kind: domain.InputNameCompany, Name: "Cy  Moss", Company: "Moss GmbH"},
		{InputRow: 4, Ref: "nd", Kind: domain.InputNameDomain, Name: "Di Ruiz", Domain: "ruiz.example"},
		{InputRow: 5, Ref: "role", Kind: domain.InputNameCompany, Name: "CTO", Company: "Moss GmbH", Role: "CTO"},
	}
	job, _, err := st.CreateJob(ctx, store.NewJob{Tenant: tenant, Lookups: []domain.Stage{domain.StageProfile, domain.StageEmail}, ChunkSize: 10},
		func(add func(store.NewRow) error) error {
			for _, r := range in {
				if err := add(r); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	claim, err := st.ClaimChunk(ctx, job.ID, 0, time.Minute)
	if err != nil || len(claim.Rows) != len(in) {
		t.Fatalf("claim: %d rows, %v", len(claim.Rows), err)
	}
	found := map[string][2]string{ // ref -> found profile URL, name
		"url": {"https://platform.example/in/ada-lane", "Ada Lane"}, "email": {"https://platform.example/in/bo-park", "Bo Park"},
		"nc": {"https://platform.example/in/cy-moss", "Cy Moss"}, "nd": {"https://platform.example/in/di-ruiz", "Di Ruiz"},
		"role": {"https://platform.example/in/eli-ward", "Eli Ward"},
	}
	var outs []store.Outcome
	var cache []store.CacheEntry
	for _, r := range claim.Rows {
		f := found[r.Ref]
		o := store.Outcome{RowID: r.ID, State: domain.RowMatched, StagesDone: []domain.Stage{domain.StageProfile}, AnyMatch: true, FoundProfileURL: f[0],
			Profile: &store.ProfileResult{ProfileURL: f[0], Name: f[1], Company: "Moss GmbH", Raw: []byte(`{"name": "` + f[1] + `"}`)},
			Prov:    store.Provenance{FetchedAt: time.Now()}}
		if r.Ref == "url" {
			o.StagesDone = append(o.StagesDone, domain.StageEmail)
			o.Email = &store.EmailResult{ProfileURL: f[0], Email: "ada@lane.example", Confidence: 0.9, Raw: []byte(`{"email": "ada@lane.example"}`)}
			cache = append(cache, store.CacheEntry{RowID: r.ID, Stage: domain.StageEmail, Key: "url:" + f[0], Matched: true, Result: []byte(`{"email": "ada@lane.example"}`), FetchedAt: time.Now()})
		}
		outs = append(outs, o)
		cache = append(cache, store.CacheEntry{RowID: r.ID, Stage: domain.StageProfile, Key: r.Ref, Matched: true, Result: []byte(`{"name": "` + f[1] + `"}`), FetchedAt: time.Now()})
	}
	if _, err := st.SaveOutcomes(ctx, tenant, claim.Token, outs, cache); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AdvanceResultsFeed(ctx); err != nil {
		t.Fatal(err)
	}
	return job
}

// eraseReq is an EraseRequest with stand-in keys: the row's ref for the
// cache (people caches by ref), its found URL to suppress.
func eraseReq(tenant string, p store.Person) store.EraseRequest {
	return store.EraseRequest{Tenant: tenant, KeyID: "k", Person: p,
		Keys: func(r store.ErasedRow) ([]string, []string) {
			refs := map[string]string{"https://platform.example/in/ada-lane": "url", "bo.park@park.example": "email", "Cy  Moss": "nc", "Di Ruiz": "nd", "CTO": "role"}
			k := []string{refs[r.ProfileURL+r.Email+r.Name]}
			if r.FoundProfileURL == "" {
				return k, nil
			}
			return append(k, "url:"+r.FoundProfileURL), []string{"url:" + r.FoundProfileURL}
		},
		Hash: func(v string) []byte { s := sha256.Sum256([]byte("key" + v)); return s[:] }}
}

// Each way of naming a person finds exactly their rows: by email (input or
// found), profile URL (input or found), name with company (input, or the
// profile found for a role), name with domain. Other tenants are untouched.
func TestEraseEachIdentity(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	other := people(t, st, "beta")
	job := people(t, st, "acme")
	// A platform member of the same person (by the email found), and a namesake of another.
	for _, m := range []store.ConnectedMember{{MemberID: "m1", Name: "Ada Lane", Email: "ada@lane.example"}, {MemberID: "m2", Name: "Cy Moss", Email: "cy@elsewhere.example"}} {
		m.Tenant, m.Profile, m.At = "acme", []byte(`{}`), time.Now()
		m.Token = store.PlatformToken{Sealed: []byte("sealed"), IssuedAt: time.Now()}
		if _, err := st.UpsertPlatformMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	refs := func(jobID string) string {
		res, err := st.ListResults(ctx, jobID, "", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range res {
			out = append(out, r.Ref)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		person store.Person
		left   string
	}{
		{store.Person{Email: "ada@lane.example"}, "email,nc,nd,role"},                   // the email found for the url row
		{store.Person{ProfileURL: "https://platform.example/in/bo-park"}, "nc,nd,role"}, // found for the email row
		{store.Person{Name: "Eli  WARD", Company: "moss gmbh"}, "nc,nd"},                // the profile found for a role
		{store.Person{Name: "cy moss", Company: "Moss GmbH"}, "nd"},                     // the uploaded name, spaces and case aside
		{store.Person{Name: "Di Ruiz", Domain: "ruiz.example"}, ""},                     // name and domain
		{store.Person{Email: "nobody@nowhere.example"}, ""},                             // nobody: an empty receipt
	} {
		e, err := st.Erase(ctx, eraseReq("acme", c.person))
		if err != nil {
			t.Fatalf("%+v: %v", c.person, err)
		}
		if want := map[bool]int64{true: 1}[c.person.Email == "ada@lane.example"]; e.Receipt["platform_members"] != want {
			t.Errorf("erasing %+v: %d platform members removed, want 1", c.person, e.Receipt["platform_members"])
		}
		if got := refs(job.ID); got != c.left {
			t.Errorf("after erasing %+v: rows %q left, want %q (receipt %v)", c.person, got, c.left, e.Receipt)
		}
	}
	if ms, err := st.ListPlatformMembers(ctx, "acme", store.MemberFilter{}); err != nil || len(ms) != 1 || ms[0].Name != "Cy Moss" {
		t.Errorf("members left: %+v, %v; want Cy Moss's alone (a namesake: a name alone names no member)", ms, err)
	}
	if got := refs(other.ID); got != "url,email,nc,nd,role" {
		t.Errorf("the other tenant's job lost rows: %q", got)
	}
	list, err := st.Erasures(ctx, "acme")
	if err != nil || len(list) != 6 || list[0].Receipt["job_rows"] != 0 {
		t.Fatalf("erasures: %+v %v", list, err)
	}
	sup, err := st.Suppressions(ctx, "acme")
	if err != nil || len(sup) != 5 {
		t.Fatalf("suppressions: %d, %v; want the 5 found URLs", len(sup), err)
	}
	if _, err := st.LiftErasure(ctx, "beta", "k", list[0].ID); err != store.ErrNotFound {
		t.Fatalf("another tenant lifted an erasure: %v", err)
	}
	if _, err := st.Erase(ctx, eraseReq("acme", store.Person{Email: "a@b.example", Name: "x"})); err == nil {
		t.Fatal("a person named two ways was erased")
	}
}

// The audit log refuses UPDATE, DELETE and TRUNCATE.
func TestAuditLogAppendOnly(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	if err := st.Audit(ctx, store.AuditLine{Tenant: "acme", KeyID: "k", Action: store.AuditFeedRead, Rows: 3}); err != nil {
		t.Fatal(err)
	}
	if err := st.Audit(ctx, store.AuditLine{Tenant: "", KeyID: "k", Action: store.AuditFeedRead}); err != store.ErrNoTenant {
		t.Fatalf("an empty tenant: %v", err)
	}
	for _, sql := range []string{`UPDATE audit_log SET rows = 0`, `DELETE FROM audit_log`, `TRUNCATE audit_log`} {
		if _, err := store.PoolForTest(st).Exec(ctx, sql); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want refused", sql, err)
		}
	}
	lines, err := st.AuditLog(ctx, "acme", 0, 10)
	if err != nil || len(lines) != 1 || lines[0].Rows != 3 || lines[0].Action != store.AuditFeedRead {
		t.Fatalf("lines %+v, %v", lines, err)
	}
	if lines, _ := st.AuditLog(ctx, "beta", 0, 10); len(lines) != 0 {
		t.Fatalf("another tenant sees %d lines", len(lines))
	}
}

// Retention purges finished jobs past the window, in batches, and keeps
// each job's counts; cache entries and feed lines past it go too.
func TestPurgeExpired(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	if _, err := st.EnsureTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.EnsureTenant(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	done := people(t, st, "acme")
	if _, err := st.FinishJobs(ctx, done.ID); err != nil {
		t.Fatal(err)
	}
	kept := people(t, st, "beta") // no window: kept (unfinished jobs: TestRetentionCancelsAbandonedJobs)
	if _, err := st.FinishJobs(ctx, kept.ID); err != nil {
		t.Fatal(err)
	}
	before, _ := st.RowCounts(ctx, done.ID)
	if p, err := st.PurgeExpired(ctx, time.Now().Add(48*time.Hour), 2); err != nil || p.Total() != 0 {
		t.Fatalf("without a window: %+v %v", p, err)
	}
	day := 24 * time.Hour
	if _, err := st.SetRetention(ctx, "acme", "k", &day); err != nil {
		t.Fatal(err)
	}
	if p, err := st.PurgeExpired(ctx, time.Now(), 2); err != nil || p.Total() != 0 {
		t.Fatalf("inside the window: %+v %v", p, err)
	}
	later := time.Now().Add(2 * day)
	var total store.Purged
	for range 10 {
		p, err := st.PurgeExpired(ctx, later, 2)
		if err != nil {
			t.Fatal(err)
		}
		if p.Rows > 2 {
			t.Fatalf("a step removed %d rows, the batch is 2", p.Rows)
		}
		total.Rows, total.Results, total.CacheEntries, total.Jobs = total.Rows+p.Rows, total.Results+p.Results, total.CacheEntries+p.CacheEntries, total.Jobs+p.Jobs
	}
	if total.Rows != 5 || total.Results != 6 || total.CacheEntries != 6 || total.Jobs != 1 {
		t.Fatalf("purged %+v; want 5 rows, 6 results, 6 cache entries, 1 job", total)
	}
	job, err := st.GetJob(ctx, "acme", done.ID)
	if err != nil || job.PurgedAt == nil {
		t.Fatalf("job %+v, %v: want purged_at", job, err)
	}
	if after, _ := st.RowCounts(ctx, done.ID); after[domain.RowMatched] != before[domain.RowMatched] || after[domain.RowMatched] != 5 {
		t.Fatalf("counts %v, before %v", after, before)
	}
	for _, id := range []string{kept.ID} {
		if counts, _ := st.RowCounts(ctx, id); counts[domain.RowPending]+counts[domain.RowMatched] == 0 {
			t.Errorf("job %s lost its rows", id)
		}
		if j, _ := st.JobByID(ctx, id); j.PurgedAt != nil {
			t.Errorf("job %s purged", id)
		}
	}
	if res, _ := st.ListResults(ctx, kept.ID, "", 0, 100); len(res) != 5 {
		t.Errorf("the other tenant's job has %d results", len(res))
	}
	lines, _ := st.AuditLog(ctx, "acme", 0, 100)
	if len(lines) != 2 || lines[0].Action != store.AuditRetention || lines[1].Action != store.AuditRetentionPurge || lines[1].Rows != 5 {
		t.Fatalf("audit %+v", lines)
	}
}
