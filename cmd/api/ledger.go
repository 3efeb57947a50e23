package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// usageError is a command line that cannot be run: main exits 2 on it.
type usageError struct{ error }

const ledgerUsage = `usage:
  api ledger account [-month YYYY-MM] [-account ID] [-json]   what the vendor key spent in a month (default: this one, UTC)
  api ledger job [-json] JOB_ID                               what a job cost, by stage and by vendor, and its disputed charges
  api ledger prices [-account ID] [-json]                     what the vendor charges, class by class, as its answers showed`

// ledgerCommand answers the two questions of whoever pays the vendor, from
// the credit ledger in Postgres. It reads DATABASE_URL and ENRICHQ_VENDOR_KEY
// (only to compute the key's id; the key itself is never stored).
func ledgerCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New(ledgerUsage)}
	}
	cfg, err := config.LedgerFromEnv(getenv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("api ledger "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	month := fs.String("month", time.Now().UTC().Format("2006-01"), "the month, YYYY-MM (UTC)")
	account := fs.String("account", cfg.VendorAccount(), "the vendor key's id (default: from ENRICHQ_VENDOR_KEY)")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{err}
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxConns: 2})
	if err != nil {
		return err
	}
	defer st.Close()

	switch args[0] {
	case "account":
		return ledgerAccount(ctx, st, cfg, *account, *month, *asJSON, stdout)
	case "prices":
		return ledgerPrices(ctx, st, *account, *asJSON, stdout)
	case "job":
		return ledgerJob(ctx, st, fs.Args(), *asJSON, stdout)
	}
	return usageError{errors.New(ledgerUsage)}
}

// ledgerAccount prints what the account spent in month, with the vendor's
// readings beside the ledger day by day.
func ledgerAccount(ctx context.Context, st *store.Store, cfg config.Ledger, account, month string, asJSON bool, stdout io.Writer) error {
	if account == "" {
		return usageError{errors.New("no account: set ENRICHQ_VENDOR_KEY or pass -account")}
	}
	m, err := time.Parse("2006-01", month)
	if err != nil {
		return usageError{fmt.Errorf("-month %q: want YYYY-MM", month)}
	}
	u, err := st.AccountMonth(ctx, account, m)
	if err != nil {
		return err
	}
	days, err := st.AccountDrift(ctx, account, m, m.AddDate(0, 1, -1))
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"account": u.Account, "month": u.Month.Format("2006-01"),
			"calls": u.Calls, "spent": u.Spent, "reserved": u.Reserved, "vendor_credits_remaining": u.CreditsRemaining,
			"monthly_allowance": cfg.Allowance(), "drift_by_day": days})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "account\t%s\nmonth\t%s\ncalls\t%d\ncredits spent\t%d\ncredits reserved\t%d\n", u.Account, u.Month.Format("2006-01"), u.Calls, u.Spent, u.Reserved)
	if a := cfg.Allowance(); a != nil {
		fmt.Fprintf(tw, "monthly allowance\t%d (%d left)\n", *a, *a-u.Spent-u.Reserved)
	}
	if u.CreditsRemaining != nil {
		fmt.Fprintf(tw, "vendor says remaining\t%d\n", *u.CreditsRemaining)
	}
	// The second witness: the vendor's X-Credits-Remaining readings beside the ledger, by day.
	for _, d := range days {
		fmt.Fprintf(tw, "drift %s\tledger %d, readings show %d billed (%d readings): %+d\n",
			d.Day.Format(time.DateOnly), d.LedgerSpent, d.VendorBilled, d.Readings, d.Drift.Drift)
	}
	return tw.Flush()
}

// ledgerPrices prints the prices learned of the account, class by class.
func ledgerPrices(ctx context.Context, st *store.Store, account string, asJSON bool, stdout io.Writer) error {
	if account == "" {
		return usageError{errors.New("no account: set ENRICHQ_VENDOR_KEY or pass -account")}
	}
	list, err := st.VendorPrices(ctx, account)
	if err != nil {
		return err
	}
	if asJSON {
		if list == nil {
			list = []store.VendorPrice{}
		}
		return json.NewEncoder(stdout).Encode(map[string]any{"account": account, "prices": list})
	}
	if len(list) == 0 {
		fmt.Fprintf(stdout, "account %s: no price learned yet (the cost table prices every answer)\n", account)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "class\tcredits\tanswers\thighest\tchanged\tlearned\n")
	for _, p := range list {
		changed := "-"
		if p.Previous != nil && p.ChangedAt != nil {
			changed = fmt.Sprintf("from %d on %s", *p.Previous, p.ChangedAt.UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", p.Class, p.Credits, p.Answers, p.Highest, changed, p.LearnedAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

// ledgerJob prints what the job of args (its one argument) cost, by stage
// and by vendor.
func ledgerJob(ctx context.Context, st *store.Store, args []string, asJSON bool, stdout io.Writer) error {
	if len(args) != 1 {
		return usageError{errors.New(ledgerUsage)}
	}
	job, err := st.JobByID(ctx, args[0])
	if err != nil {
		return fmt.Errorf("job %s: %w", args[0], err)
	}
	costs, err := st.JobCosts(ctx, job.ID)
	if err != nil {
		return err
	}
	byVendor, err := st.JobVendorCosts(ctx, job.ID)
	if err != nil {
		return err
	}
	disputed, err := st.JobDisputedCharges(ctx, job.ID)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"job_id": job.ID, "by_stage": costs, "by_vendor": byVendor,
			"spent": job.CreditsSpent, "reserved": job.CreditsReserved, "budget": job.BudgetCredits, "disputed": disputed})
	}
	stages := make([]domain.Stage, 0, len(costs))
	for s := range costs {
		stages = append(stages, s)
	}
	slices.Sort(stages)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "stage\tcalls\tcredits\t\n")
	for _, s := range stages {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", s, costs[s].Calls, costs[s].Credits)
	}
	fmt.Fprintf(tw, "total\t\t%d\t\n", job.CreditsSpent)
	// Every vendor's credits in budget units (its credits times its credit_value).
	vendors := slices.Sorted(maps.Keys(byVendor))
	fmt.Fprintf(tw, "\nvendor\tcalls\tcredits\t\n")
	for _, v := range vendors {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", v, byVendor[v].Calls, byVendor[v].Credits)
	}
	// Charges the vendor claimed outside its contract, settled at the contract's price.
	if len(disputed) > 0 {
		fmt.Fprintf(tw, "\ndisputed\tvendor\tclaimed\tsettled at\t\n")
		for _, d := range disputed {
			fmt.Fprintf(tw, "ledger %d\t%s\t%d\t%d\t\n", d.LedgerID, d.Vendor, d.Claimed, d.Charged)
		}
	}
	return tw.Flush()
}
