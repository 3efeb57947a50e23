package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
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

func TestConnectStateWorksOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	if err := st.SaveConnectState(ctx, []byte("hash-1"), "acme", []byte("v1"), t0, t0.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveConnectState(ctx, []byte("hash-2"), "acme", []byte("v2"), t0, t0.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	tenant, v, err := st.TakeConnectState(ctx, []byte("hash-1"), t0.Add(time.Minute))
	if err != nil || tenant != "acme" || string(v) != "v1" {
		t.Fatalf("take: %q %q %v", tenant, v, err)
	}
	if _, _, err := st.TakeConnectState(ctx, []byte("hash-1"), t0.Add(time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second take: %v, want ErrNotFound", err)
	}
	if _, _, err := st.TakeConnectState(ctx, []byte("forged"), t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown state: %v, want ErrNotFound", err)
	}
	if _, _, err := st.TakeConnectState(ctx, []byte("hash-2"), t0.Add(10*time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired state: %v, want ErrNotFound", err)
	}
	_ = st.SaveConnectState(ctx, []byte("hash-3"), "acme", []byte("v3"), t0, t0.Add(time.Minute))
	if n, err := st.DeleteExpiredConnectStates(ctx, t0.Add(2*time.Minute)); err != nil || n != 1 {
		t.Errorf("delete expired: %d, %v", n, err)
	}
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

func ids(ms []store.PlatformMember) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Tenant+"/"+m.MemberID)
	}
	return out
}

func TestPlatformSyncJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	var members []store.PlatformMember
	for i := range 5 {
		members = append(members, connect(t, st, "acme", fmt.Sprint("m-", i), at(t0.Add(30*24*time.Hour)), false, nil))
	}
	connect(t, st, "beta", "m-beta", nil, false, nil)

	// Unknown members (or another tenant's) store nothing.
	_, _, err := st.CreatePlatformSync(ctx, store.NewPlatformSync{Tenant: "acme", Members: []string{"m-0", "m-beta", "nope"}, ChunkSize: 2})
	var unknown *store.UnknownMembersError
	if !errors.As(err, &unknown) || len(unknown.Refs) != 2 {
		t.Fatalf("unknown members: %v", err)
	}
	if _, _, err := st.CreatePlatformSync(ctx, store.NewPlatformSync{Tenant: "gamma", All: true, ChunkSize: 2}); !errors.Is(err, store.ErrNoMembers) {
		t.Fatalf("no members: %v", err)
	}

	// By enrichq id and by platform id, duplicates once.
	job, created, err := st.CreatePlatformSync(ctx, store.NewPlatformSync{Tenant: "acme", Name: "refresh reps",
		Members: []string{members[3].ID, "m-1", "m-3"}, IdempotencyKey: "k1", ChunkSize: 2})
	if err != nil || !created || job.TotalRows != 2 || job.ChunkCount != 1 || job.SourceFormat != "platform" || job.State != domain.JobQueued {
		t.Fatalf("create: %+v %v %v", job, created, err)
	}
	again, created, err := st.CreatePlatformSync(ctx, store.NewPlatformSync{Tenant: "acme", Name: "refresh reps",
		Members: []string{members[3].ID, "m-1", "m-3"}, IdempotencyKey: "k1", ChunkSize: 2})
	if err != nil || created || again.ID != job.ID {
		t.Fatalf("idempotent replay: %s %v %v", again.ID, created, err)
	}
	// Other members under the key: refused, nothing stored.
	if _, _, err := st.CreatePlatformSync(ctx, store.NewPlatformSync{Tenant: "acme", Members: []string{"m-0"}, IdempotencyKey: "k1", ChunkSize: 2}); !errors.Is(err, store.ErrIdempotencyKeyReused) {
		t.Fatalf("another request under the key: %v", err)
	}
	if ok, _ := st.IsPlatformSync(ctx, "acme", job.ID); !ok {
		t.Error("IsPlatformSync: false")
	}
	if ok, _ := st.IsPlatformSync(ctx, "beta", job.ID); ok {
		t.Error("IsPlatformSync of another tenant: true")
	}

	all, _, err := st.CreatePlatformSync(ctx, store.NewPlatformSync{Tenant: "acme", All: true, ChunkSize: 2})
	if err != nil || all.TotalRows != 5 || all.ChunkCount != 3 {
		t.Fatalf("all: %+v %v", all, err)
	}
	// The vendor pipeline never sees member rows.
	if refs, _ := st.DispatchChunks(ctx, "", 100, time.Minute, 100); len(refs) != 0 {
		t.Fatalf("vendor chunks to enqueue: %v", refs)
	}
	now := time.Now()
	refs, err := st.PlatformChunksToEnqueue(ctx, now, time.Minute, 100)
	if err != nil || len(refs) != 4 {
		t.Fatalf("platform chunks to enqueue: %v %v", refs, err)
	}
	if refs, _ := st.PlatformChunksToEnqueue(ctx, now, time.Minute, 100); len(refs) != 0 {
		t.Fatalf("enqueued again within recheck: %v", refs)
	}

	claim, err := st.ClaimPlatformChunk(ctx, all.ID, 0, time.Minute, now)
	if err != nil || len(claim.Rows) != 2 || claim.Tenant != "acme" {
		t.Fatalf("claim: %+v %v", claim, err)
	}
	r0, r1 := claim.Rows[0], claim.Rows[1]
	if r0.Member == nil || r0.Member.MemberID != "m-0" || string(r0.Member.Token.Sealed) != "sealed-m-0" || r0.Ref != "m-0" {
		t.Fatalf("claimed row: %+v %+v", r0, r0.Member)
	}
	if again, _ := st.ClaimPlatformChunk(ctx, all.ID, 0, time.Minute, now); len(again.Rows) != 0 {
		t.Fatal("a claimed row was claimed twice")
	}
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 30, 0, time.UTC)
	written, err := st.SavePlatformOutcomes(ctx, claim.Token, []store.SyncOutcome{
		{RowID: r0.ID, MemberID: r0.Member.ID, State: domain.RowMatched, FetchedAt: now,
			Profile: &store.ProfileResult{Name: "Ann Lee", Headline: "VP", Raw: []byte(`{"id":"m-0","extra":1}`)}},
		{RowID: r1.ID, State: domain.RowRetryWait, NextAttemptAt: midnight, LastError: "daily quota"},
	})
	if err != nil || len(written) != 2 {
		t.Fatalf("save: %v %v", written, err)
	}
	if ps, err := st.StoredProfiles(ctx, all.ID); err != nil || len(ps) != 1 || ps[0].RowID != r0.ID || ps[0].Source != "platform" ||
		!ps[0].FetchedAt.Equal(now.Truncate(time.Microsecond)) || !strings.Contains(string(ps[0].Raw), `"extra": 1`) {
		t.Fatalf("stored profiles: %+v %v", ps, err)
	}
	if m, _ := st.GetPlatformMember(ctx, "acme", r0.Member.ID); m.LastSyncedAt == nil || m.Name != "Ann Lee" {
		t.Errorf("member after sync: %+v", m)
	}
	if next, _ := st.NextAttempt(ctx, all.ID); next == nil || !next.Equal(midnight) {
		t.Errorf("next attempt: %v, want %v", next, midnight)
	}
	// The parked row is due at midnight on the caller's clock, not before.
	if c, _ := st.ClaimPlatformChunk(ctx, all.ID, 0, time.Minute, midnight.Add(-time.Second)); len(c.Rows) != 0 {
		t.Error("a parked row was claimed before it was due")
	}
	if refs, _ := st.PlatformChunksToEnqueue(ctx, midnight.Add(-time.Second), 24*time.Hour, 100); len(refs) != 0 {
		t.Errorf("chunk of a parked row enqueued before it is due: %v", refs)
	}
	if refs, _ := st.PlatformChunksToEnqueue(ctx, midnight, 24*time.Hour, 100); len(refs) != 1 || refs[0].Chunk != 0 {
		t.Errorf("chunk of a parked row once due (even within recheck): %v", refs)
	}
	if c, _ := st.ClaimPlatformChunk(ctx, all.ID, 0, time.Minute, midnight); len(c.Rows) != 1 || c.Rows[0].ID != r1.ID {
		t.Errorf("claim once due: %+v", c)
	}
}

// A resumed member sync is dispatched at the scheduler's next step, not
// after the recheck: its chunks were handed out just before the pause.
func TestResumedPlatformSyncIsDueAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	for i := range 3 {
		connect(t, st, "acme", fmt.Sprint("m-", i), nil, false, nil)
	}
	job, _, err := st.CreatePlatformSync(ctx, store.NewPlatformSync{Tenant: "acme", All: true, ChunkSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if chunks, err := st.OpenPlatformChunks(ctx, job.ID); err != nil || len(chunks) != 2 || chunks[0] != 0 || chunks[1] != 1 {
		t.Fatalf("open chunks: %v %v", chunks, err)
	}
	if refs, err := st.PlatformChunksToEnqueue(ctx, time.Now(), time.Hour, 100); err != nil || len(refs) != 2 {
		t.Fatalf("first dispatch: %v %v", refs, err)
	}
	if ok, err := st.PauseJob(ctx, job.ID, domain.PausedByPlatform, "platform version 202611 is retired; set a newer one"); err != nil || !ok {
		t.Fatalf("pause: %v %v", ok, err)
	}
	if err := st.ResumeJob(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	if refs, err := st.PlatformChunksToEnqueue(ctx, time.Now(), time.Hour, 100); err != nil || len(refs) != 2 {
		t.Fatalf("dispatch after resume, within the recheck: %v %v", refs, err)
	}
	other, _, err := st.CreatePlatformSync(ctx, store.NewPlatformSync{Tenant: "acme", Members: []string{"m-0"}, ChunkSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	claim, err := st.ClaimPlatformChunk(ctx, other.ID, 0, time.Minute, time.Now())
	if err != nil || len(claim.Rows) != 1 {
		t.Fatalf("claim: %+v %v", claim, err)
	}
	if chunks, err := st.OpenPlatformChunks(ctx, other.ID); err != nil || len(chunks) != 0 {
		t.Errorf("open chunks of a job whose one row is in flight: %v %v", chunks, err)
	}
}
