package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
	"github.com/enrichq/enrichq/internal/store/storetest"
)

// `api ledger account` and `api ledger job` read back what the ledger holds.
func TestLedgerAnswersBothQuestions(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDatabase(t)
	env := map[string]string{"DATABASE_URL": dbURL, "ENRICHQ_VENDOR_KEY": "vendor-secret", "ENRICHQ_VENDOR_MONTHLY_CREDITS": "1000"}
	getenv := func(k string) string { return env[k] }
	cfg, _ := config.LedgerFromEnv(getenv)
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	job, _, err := st.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 10}, func(add func(store.NewRow) error) error {
		return add(store.NewRow{InputRow: 1, Kind: "email", Email: "a@b.example"})
	})
	if err != nil {
		t.Fatal(err)
	}
	id, err := st.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: "profile", Endpoint: "/v1/profile", IdempotencyKey: "k", Credits: 2,
		TTL: time.Minute, Account: cfg.VendorAccount()})
	if err != nil {
		t.Fatal(err)
	}
	remaining := int64(9998)
	if err := st.Settle(ctx, id, store.Settlement{Charged: 2, Reported: true, Remaining: &remaining}); err != nil {
		t.Fatal(err)
	}

	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"api", "ledger", "account", "-json"}, getenv, &out, &errOut); err != nil {
		t.Fatalf("account: %v (%s)", err, errOut.String())
	}
	var acct map[string]any
	if err := json.Unmarshal(out.Bytes(), &acct); err != nil {
		t.Fatal(err)
	}
	if acct["spent"] != 2.0 || acct["calls"] != 1.0 || acct["vendor_credits_remaining"] != 9998.0 || acct["monthly_allowance"] != 1000.0 {
		t.Fatalf("account = %v", acct)
	}
	out.Reset()
	if err := run(ctx, []string{"api", "ledger", "job", job.ID}, getenv, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "profile") || !strings.Contains(out.String(), "total") {
		t.Fatalf("job table:\n%s", out.String())
	}
	out.Reset()
	if _, err := st.LearnPrice(ctx, cfg.VendorAccount(), "email/miss", 5, id); err != nil {
		t.Fatal(err)
	}
	if _, err := st.LearnPrice(ctx, cfg.VendorAccount(), "email/miss", 6, id); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"api", "ledger", "prices"}, getenv, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "email/miss") || !strings.Contains(out.String(), "from 5 on") {
		t.Fatalf("prices table:\n%s", out.String())
	}
	var u usageError
	if err := run(ctx, []string{"api", "ledger", "job"}, getenv, &out, &errOut); !errors.As(err, &u) {
		t.Fatalf("missing job id: %v, want a usage error", err)
	}
}

// `api ledger job` shows the calls whose vendor charged outside its
// contract: the claim beside the contract's price they were settled at.
func TestLedgerJobShowsDisputedCharges(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDatabase(t)
	getenv := func(k string) string { return map[string]string{"DATABASE_URL": dbURL}[k] }
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	job, _, err := st.CreateJob(ctx, store.NewJob{Tenant: "acme", Lookups: []domain.Stage{domain.StageProfile}, ChunkSize: 10}, func(add func(store.NewRow) error) error {
		return add(store.NewRow{InputRow: 1, Kind: "email", Email: "a@b.example"})
	})
	if err != nil {
		t.Fatal(err)
	}
	id, err := st.Reserve(ctx, store.Reservation{JobID: job.ID, Stage: "profile", Endpoint: "/v1/profile", IdempotencyKey: "k", Credits: 2,
		TTL: time.Minute, Vendor: "acme-data"})
	if err != nil {
		t.Fatal(err)
	}
	claimed := int64(1_000_000_000)
	if err := st.Settle(ctx, id, store.Settlement{Charged: 2, Disputed: &claimed}); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"api", "ledger", "job", job.ID}, getenv, &out, &errOut); err != nil {
		t.Fatalf("job: %v (%s)", err, errOut.String())
	}
	if !strings.Contains(out.String(), "disputed") || !strings.Contains(out.String(), "acme-data") || !strings.Contains(out.String(), "1000000000") {
		t.Fatalf("job table without its disputed charge:\n%s", out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"api", "ledger", "job", "-json", job.ID}, getenv, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Disputed []store.DisputedCharge `json:"disputed"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Disputed) != 1 || got.Disputed[0].Claimed != claimed || got.Disputed[0].Charged != 2 {
		t.Fatalf("disputed = %+v", got.Disputed)
	}
}
