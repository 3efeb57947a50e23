package main

import (
	"context"
	"fmt"
	"io"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/store"
)

const jobsUsage = `usage:
  api jobs resume-vendor-paused   resume every job the vendor's refusal of the key or plan (401, 403)
                                  paused, once ENRICHQ_VENDOR_KEY or the plan is fixed`

// jobsCommand is the operator's hand on jobs of every tenant.
func jobsCommand(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) != 1 || args[0] != "resume-vendor-paused" {
		return usageError{fmt.Errorf("%s", jobsUsage)}
	}
	cfg, err := config.APIFromEnv(getenv)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxConns: 2})
	if err != nil {
		return err
	}
	defer st.Close()
	ids, err := st.ResumeVendorPaused(ctx)
	for _, id := range ids {
		fmt.Fprintln(stdout, "resumed", id)
	}
	if err != nil {
		return fmt.Errorf("api jobs resume-vendor-paused: %w", err)
	}
	fmt.Fprintf(stdout, "%d jobs resumed\n", len(ids))
	return nil
}
