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
