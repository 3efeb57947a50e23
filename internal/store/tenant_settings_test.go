package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

func reserveOf(job string, credits int64) store.Reservation {
	return store.Reservation{JobID: job, Stage: domain.StageEmail, Endpoint: "/v1/email", IdempotencyKey: "k", Credits: credits, TTL: time.Minute}
}

// A new tenant has the default limits and a webhook secret of its own.
func TestTenantDefaults(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	for _, id := range []string{"acme", "beta"} {
		if _, err := st.EnsureTenant(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	s, err := st.GetTenantSettings(ctx, "acme")
	if err != nil || s.DefaultJobBudget == nil || *s.DefaultJobBudget != store.DefaultJobBudget ||
		s.MonthlyAllowance == nil || *s.MonthlyAllowance != store.DefaultMonthlyAllowance || s.WebhookSecretRotatedAt.IsZero() {
		t.Fatalf("settings of a new tenant: %+v %v", s, err)
	}
	a, _ := st.TenantWebhookSecret(ctx, "acme")
	b, _ := st.TenantWebhookSecret(ctx, "beta")
	if len(a) < 40 || !strings.HasPrefix(a, "whsec_") || a == b {
		t.Fatalf("webhook secrets %q and %q: want two distinct ones", a, b)
	}
	if _, err := st.GetTenantSettings(ctx, "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("settings of an unknown tenant: %v", err)
	}
	if _, err := st.GetTenantSettings(ctx, ""); !errors.Is(err, store.ErrNoTenant) {
		t.Errorf("settings of an empty tenant: %v", err)
	}
}

// The tenant's monthly allowance holds across its jobs and workers, is
// shown spent and reserved, and leaves other tenants alone.
func TestTenantAllowanceHoldsAcrossJobs(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	ctx := context.Background()
	for _, id := range []string{"acme", "beta"} {
		if _, err := st.EnsureTenant(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	fifty := int64(50)
	if _, err := st.UpdateTenantLimits(ctx, "acme", store.TenantLimits{MonthlyAllowance: store.Limit{Set: true, Value: &fifty}}); err != nil {
		t.Fatal(err)
	}
	a := createJob(t, st, store.NewJob{}, 1)
	b := createJob(t, st, store.NewJob{}, 1)
	other := createJob(t, st, store.NewJob{Tenant: "beta"}, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var granted []int64
	for i := range 30 {
		job := a.ID
		if i%2 == 1 {
			job = b.ID
		}
		wg.Go(func() {
			id, err := st.Reserve(ctx, reserveOf(job, 10))
			var be *store.BudgetError
			if errors.As(err, &be) {
				if be.Scope != "tenant" || be.Budget != 50 || be.Spent+be.Reserved+be.Wanted <= 50 {
					t.Errorf("refusal %+v, want the tenant's allowance of 50", be)
				}
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			granted = append(granted, id)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(granted) != 5 {
		t.Fatalf("%d reservations of 10 granted under a tenant allowance of 50, want 5", len(granted))
	}
	if u, err := st.TenantMonth(ctx, "acme", time.Now()); err != nil || u.Reserved != 50 || u.Spent != 0 {
		t.Fatalf("usage while reserved: %+v %v", u, err)
	}
	// A refused reservation leaves nothing held on the jobs.
	ja, _ := st.JobByID(ctx, a.ID)
	jb, _ := st.JobByID(ctx, b.ID)
	if ja.CreditsReserved+jb.CreditsReserved != 50 {
		t.Errorf("the jobs hold %d credits, want the 50 granted", ja.CreditsReserved+jb.CreditsReserved)
	}
	for i, id := range granted {
		var err error
		switch i {
		case 0:
			err = st.Release(ctx, id, "never sent")
		case 1:
			err = st.MarkUnknown(ctx, id, "timeout")
		default:
			err = st.Settle(ctx, id, store.Settlement{Charged: 4, Reported: true})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if u, _ := st.TenantMonth(ctx, "acme", time.Now()); u.Reserved != 0 || u.Spent != 10+3*4 {
		t.Fatalf("usage after closing: %+v, want 22 spent, 0 reserved", u)
	}
	// The other tenant is not held by acme's allowance.
	if _, err := st.Reserve(ctx, reserveOf(other.ID, 40)); err != nil {
		t.Fatalf("beta's reservation: %v", err)
	}
	// Room freed by the settlements is usable again; no allowance, no cap.
	if _, err := st.Reserve(ctx, reserveOf(a.ID, 28)); err != nil {
		t.Fatalf("a reservation that fits the freed room: %v", err)
	}
	if _, err := st.Reserve(ctx, reserveOf(a.ID, 1)); !errors.Is(err, store.ErrBudgetExhausted) {
		t.Fatalf("over the allowance: %v", err)
	}
	if _, err := st.UpdateTenantLimits(ctx, "acme", store.TenantLimits{MonthlyAllowance: store.Limit{Set: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Reserve(ctx, reserveOf(a.ID, 1000)); err != nil {
		t.Fatalf("without an allowance: %v", err)
	}
}
