package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// An erasure finds the person's watch inputs by every value that names
// them (the input's email or the email its snapshot found, its profile URL
// or the one found, name with company or domain, spaces and case aside) and
// the tenant's platform members by a profile URL, each through an index of
// that value (TestSeekStatementsReachTheirRowsByIndex): another tenant's
// inputs of the same person and the tenant's other inputs stay.
func TestErasureFindsWatchInputsAndMembersByTheirValues(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	pool := store.PoolForTest(st)
	watches := map[string]string{}
	for _, tenant := range []string{"acme", "beta"} {
		var id string
		if err := pool.QueryRow(ctx, `INSERT INTO watches (tenant, source_job, lookups, every_seconds, monthly_cap_credits,
				day_offset_seconds, next_run_at, created_at, updated_at)
			VALUES ($1, gen_random_uuid(), '{profile}', 604800, 0, 0, now(), now(), now()) RETURNING id::text`, tenant).Scan(&id); err != nil {
			t.Fatal(err)
		}
		watches[tenant] = id
		if _, err := pool.Exec(ctx, `INSERT INTO watch_inputs (watch_id, n, input_kind, profile_url, name, company, domain, email, found_profile_url, snap_email)
			VALUES ($1, 1, 'email', NULL, NULL, NULL, NULL, 'ada@lane.example', NULL, NULL),
				($1, 2, 'profile_url', 'https://platform.example/in/someone', NULL, NULL, NULL, NULL, NULL, 'ada@lane.example'),
				($1, 3, 'profile_url', 'https://platform.example/in/bo', NULL, NULL, NULL, NULL, NULL, NULL),
				($1, 4, 'name_company', NULL, 'Bo Park', 'Park AG', NULL, NULL, 'https://platform.example/in/bo', NULL),
				($1, 5, 'name_company', NULL, 'Cy  Moss', 'Moss GmbH', NULL, NULL, NULL, NULL),
				($1, 6, 'name_domain', NULL, 'Di Ruiz', NULL, 'ruiz.example', NULL, NULL, NULL),
				($1, 7, 'name_company', NULL, 'Cy Moss', 'Other Ltd', NULL, NULL, NULL, NULL)`, id); err != nil {
			t.Fatal(err)
		}
	}
	for i, profile := range []string{`{"profile_url": "https://platform.example/in/bo"}`, `{"url": "https://platform.example/in/bo"}`, `{"url": "https://platform.example/in/eli"}`} {
		m := store.ConnectedMember{Tenant: "acme", MemberID: string(rune('a' + i)), Name: "member", Profile: []byte(profile), At: time.Now(),
			Token: store.PlatformToken{Sealed: []byte("sealed"), IssuedAt: time.Now()}}
		if _, err := st.UpsertPlatformMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		person          store.Person
		inputs, members int64
	}{
		{store.Person{Email: "ada@lane.example"}, 2, 0},                    // the input's email, the snapshot's
		{store.Person{ProfileURL: "https://platform.example/in/bo"}, 2, 2}, // the input's URL, the one found; members by profile_url and url
		{store.Person{Name: "cy moss", Company: "moss gmbh"}, 1, 0},        // spaces and case aside; not the namesake elsewhere
		{store.Person{Name: "Di Ruiz", Domain: "ruiz.example"}, 1, 0},
	} {
		e, err := st.Erase(ctx, eraseReq("acme", c.person))
		if err != nil {
			t.Fatalf("%+v: %v", c.person, err)
		}
		if e.Receipt["watch_inputs"] != c.inputs || e.Receipt["platform_members"] != c.members {
			t.Errorf("erasing %+v: receipt %v, want %d watch inputs and %d members", c.person, e.Receipt, c.inputs, c.members)
		}
	}
	for tenant, want := range map[string]int{"acme": 1, "beta": 7} {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM watch_inputs WHERE watch_id = $1`, watches[tenant]).Scan(&n); err != nil || n != want {
			t.Errorf("%s's watch keeps %d inputs (%v), want %d", tenant, n, err, want)
		}
	}
	if ms, err := st.ListPlatformMembers(ctx, "acme", store.MemberFilter{}); err != nil || len(ms) != 1 {
		t.Errorf("members left: %+v, %v; want the one of another URL", ms, err)
	}
}
