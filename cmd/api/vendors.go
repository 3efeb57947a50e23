package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/store"
)

const vendorsUsage = `usage:
  api vendors back [-tenant T] VENDOR   put a vendor taken out of the waterfall (out of credits, its
                                        quota spent, its key refused) back at once, for one tenant or
                                        every tenant, once its credits are bought, its quota renewed
                                        or its key fixed (else it is tried again after an hour)`

// vendorsCommand is the operator's hand on the vendors out of the tenants' waterfalls.
func vendorsCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) < 1 || args[0] != "back" {
		return usageError{fmt.Errorf("%s", vendorsUsage)}
	}
	fs := flag.NewFlagSet("api vendors back", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tenant := fs.String("tenant", "", "the tenant (default: every tenant)")
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 1 {
		return usageError{fmt.Errorf("%s", vendorsUsage)}
	}
	vendor := fs.Arg(0)
	cfg, err := config.APIFromEnv(getenv)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxConns: 2})
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := st.BringVendorBack(ctx, vendor, *tenant)
	if err != nil {
		return fmt.Errorf("api vendors back: %w", err)
	}
	fmt.Fprintf(stdout, "vendor %s back in the waterfall of %d tenants\n", vendor, n)
	return nil
}
