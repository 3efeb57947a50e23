package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

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
