package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/store"
)

const keysUsage = `usage:
  api keys create --tenant T [--name N]   create a key; it is printed once and only its hash is stored
  api keys list [--tenant T]              list keys (never the keys themselves)
  api keys revoke ID                      revoke a key at once`

// keysCommand manages the API keys stored in Postgres.
func keysCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(keysUsage)
	}
	fs := flag.NewFlagSet("api keys "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	tenant := fs.String("tenant", "", "the tenant the key belongs to")
	name := fs.String("name", "", "a name to recognise the key by")
	if err := fs.Parse(args[1:]); err != nil {
		return err
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
	if cfg.Migrate {
		if err := st.Migrate(ctx, nil); err != nil {
			return err
		}
	}
	switch args[0] {
	case "create":
		if *tenant == "" {
			return errors.New("api keys create: --tenant is required")
		}
		k, key, err := st.CreateAPIKey(ctx, *tenant, *name)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "key %s created for tenant %q; it is shown once, store it now:\n", k.ID, k.Tenant)
		fmt.Fprintln(stdout, key)
		return nil
	case "list":
		keys, err := st.ListAPIKeys(ctx, *tenant)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTENANT\tNAME\tPREFIX\tCREATED\tLAST USED\tREVOKED")
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Tenant, k.Name, k.Prefix, k.CreatedAt.Format("2006-01-02 15:04"),
				when(k.LastUsedAt), when(k.RevokedAt))
		}
		return tw.Flush()
	case "revoke":
		if fs.NArg() != 1 {
			return errors.New("api keys revoke: give the key's ID (see api keys list)")
		}
		if err := st.RevokeAPIKey(ctx, fs.Arg(0)); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("api keys revoke: no live key with id %s", fs.Arg(0))
			}
			return err
		}
		fmt.Fprintf(stderr, "key %s revoked\n", fs.Arg(0))
		return nil
	}
	return errors.New(keysUsage)
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format("2006-01-02 15:04")
}
