package store_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func at(t time.Time) *time.Time { return &t }

// connectSeq orders members by the time they connected.
var connectSeq atomic.Int64

// connect stores a member of tenant whose token expires at expires.
func connect(t *testing.T, st *store.Store, tenant, memberID string, expires *time.Time, refreshable bool, refreshExpires *time.Time) store.PlatformMember {
	t.Helper()
	m, err := st.UpsertPlatformMember(context.Background(), store.ConnectedMember{
		Tenant: tenant, MemberID: memberID, Name: "Name " + memberID, Email: memberID + "@example.com",
		Profile: []byte(`{"id":"` + memberID + `"}`), At: t0.Add(time.Duration(connectSeq.Add(1)) * time.Millisecond),
		Token: store.PlatformToken{Sealed: []byte("sealed-" + memberID), IssuedAt: t0, ExpiresAt: expires,
			Refreshable: refreshable, RefreshExpiresAt: refreshExpires, Scopes: []string{"openid", "profile"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPlatformMembers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	soon := connect(t, st, "acme", "m-soon", at(t0.Add(3*24*time.Hour)), false, nil)
	late := connect(t, st, "acme", "m-late", at(t0.Add(60*24*time.Hour)), false, nil)
	refr := connect(t, st, "acme", "m-refresh", at(t0.Add(2*24*time.Hour)), true, at(t0.Add(300*24*time.Hour)))
	other := connect(t, st, "beta", "m-soon", at(t0.Add(24*time.Hour)), false, nil)
	if other.ID == soon.ID {
		t.Fatal("the same platform member in two tenants is one row")
	}

	all, err := st.ListPlatformMembers(ctx, "acme", store.MemberFilter{})
	if err != nil || len(all) != 3 {
		t.Fatalf("list: %d, %v", len(all), err)
	}
	for _, m := range all {
		if string(m.Token.Sealed) != "sealed-"+m.MemberID || m.Token.ExpiresAt == nil || m.Tenant != "acme" {
			t.Errorf("member %+v", m)
		}
	}
	ending, err := st.ListPlatformMembers(ctx, "acme", store.MemberFilter{EndingBefore: at(t0.Add(7 * 24 * time.Hour))})
	if err != nil || len(ending) != 1 || ending[0].ID != soon.ID {
		t.Fatalf("ending within 7d: %v, %v (the refreshable one ends with its refresh token)", ids(ending), err)
	}
	page, _ := st.ListPlatformMembers(ctx, "acme", store.MemberFilter{After: all[0].ID, Limit: 1})
	if len(page) != 1 || page[0].ID != all[1].ID {
		t.Errorf("page after the first: %v", ids(page))
	}
	if _, err := st.GetPlatformMember(ctx, "beta", soon.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant's member: %v", err)
	}

	// Loud expiry. A 2-day token is refreshed within half its life, not 7 days ahead.
	if got, err := st.MembersToRefresh(ctx, t0, 7*24*time.Hour, 10); err != nil || len(got) != 0 {
		t.Errorf("to refresh at once: %v %v", ids(got), err)
	}
	if got, _ := st.MembersToRefresh(ctx, t0.Add(24*time.Hour), 7*24*time.Hour, 10); len(got) != 1 || got[0].ID != refr.ID {
		t.Errorf("to refresh after a day: %v", ids(got))
	}
	warned, err := st.MembersToWarn(ctx, t0, 7*24*time.Hour, 24*time.Hour, 10)
	if err != nil || len(warned) != 2 { // m-soon of acme and of beta
		t.Errorf("warned: %v", ids(warned))
	}
	if again, _ := st.MembersToWarn(ctx, t0.Add(time.Hour), 7*24*time.Hour, 24*time.Hour, 10); len(again) != 0 {
		t.Errorf("warned again within a day: %v", ids(again))
	}
	if again, _ := st.MembersToWarn(ctx, t0.Add(25*time.Hour), 7*24*time.Hour, 24*time.Hour, 10); len(again) != 2 {
		t.Errorf("warned again after a day: %v", ids(again))
	}
	expired, err := st.ExpireMembers(ctx, t0.Add(4*24*time.Hour), 10)
	if err != nil || len(expired) != 2 {
		t.Fatalf("expired: %v, %v", ids(expired), err)
	}
	if m, _ := st.GetPlatformMember(ctx, "acme", soon.ID); m.Status != store.MemberNeedsReauth || m.StatusReason == "" {
		t.Errorf("expired member: %s %q", m.Status, m.StatusReason)
	}
	if m, _ := st.GetPlatformMember(ctx, "acme", refr.ID); m.Status != store.MemberActive {
		t.Errorf("refreshable member expired although its refresh token lives: %s", m.Status)
	}
	if m, _ := st.GetPlatformMember(ctx, "acme", late.ID); m.Status != store.MemberActive {
		t.Errorf("late member: %s", m.Status)
	}
	// needs_reauth members are listed as ending.
	if ending, _ := st.ListPlatformMembers(ctx, "acme", store.MemberFilter{EndingBefore: at(t0)}); len(ending) != 1 || ending[0].ID != soon.ID {
		t.Errorf("ending now: %v", ids(ending))
	}

	// Reconnecting makes the member active with the new token.
	again := connect(t, st, "acme", "m-soon", at(t0.Add(60*24*time.Hour)), false, nil)
	if again.ID != soon.ID || again.Status != store.MemberActive || again.StatusReason != "" {
		t.Errorf("reconnected: %+v", again)
	}

	// A claimed refresh replaces the token; while it is claimed, no other
	// refresher wins the member.
	cur, claim, err := st.ClaimMemberRefresh(ctx, refr.ID, time.Minute)
	if err != nil || claim == "" || cur.ID != refr.ID {
		t.Fatalf("claim: %q %v", claim, err)
	}
	if _, other, err := st.ClaimMemberRefresh(ctx, refr.ID, time.Minute); err != nil || other != "" {
		t.Fatalf("a second claim while the first holds: %q %v", other, err)
	}
	m, err := st.FinishMemberRefresh(ctx, refr.ID, claim, store.MemberUpdate{Token: &store.PlatformToken{Sealed: []byte("new"), IssuedAt: t0.Add(time.Hour),
		ExpiresAt: at(t0.Add(61 * 24 * time.Hour)), Refreshable: true}})
	if err != nil || string(m.Token.Sealed) != "new" || m.RefreshedAt == nil || len(m.Token.Scopes) != 2 {
		t.Errorf("claimed update: %+v, %v", m, err)
	}
	if _, err := st.FinishMemberRefresh(ctx, refr.ID, claim, store.MemberUpdate{}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a claim given up, used again: %v", err)
	}
	// A lapsed claim is taken over.
	if _, c1, _ := st.ClaimMemberRefresh(ctx, refr.ID, time.Millisecond); c1 == "" {
		t.Fatal("no claim after the first was given up")
	}
	time.Sleep(5 * time.Millisecond) // the claim's lease, by the database's clock
	_, c2, err := st.ClaimMemberRefresh(ctx, refr.ID, time.Minute)
	if err != nil || c2 == "" {
		t.Fatalf("a lapsed claim not taken over: %q %v", c2, err)
	}
	m, _ = st.FinishMemberRefresh(ctx, refr.ID, c2, store.MemberUpdate{NeedsReauth: "refresh refused"})
	if m.Status != store.MemberNeedsReauth || m.StatusReason != "refresh refused" {
		t.Errorf("claimed needs_reauth: %s %q", m.Status, m.StatusReason)
	}
	if _, c3, _ := st.ClaimMemberRefresh(ctx, refr.ID, time.Minute); c3 != "" {
		t.Error("a member who needs to reconnect was claimed for a refresh")
	}
}
