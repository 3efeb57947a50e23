package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

const keysUsage = `usage:
  api keys create --tenant T [--name N] [--scope read,submit,admin] [--mcp-max-budget N] [--mcp-max-daily-budget N]
                                          create a key; it is printed once and only its hash is stored.
                                          --scope: what the key may do (default read,submit; read alone
                                          makes an ETL key that cannot spend; see docs/api.md, "Scopes").
                                          --mcp-max-budget: the most a job submitted or raised through MCP
                                          with this key may have as its budget (default ENRICHQ_MCP_MAX_BUDGET;
                                          0: none; docs/mcp.md)
                                          --mcp-max-daily-budget: the most this key may commit through MCP in a
                                          UTC day, budgets submitted and increases raised (default
                                          ENRICHQ_MCP_MAX_DAILY_BUDGET, else 5 times its MCP budget ceiling)
  api keys list [--tenant T]              list keys and their scopes (never the keys themselves)
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
	scope := fs.String("scope", "read,submit", "the key's scopes, comma-separated: read, submit, admin")
	mcpMax := fs.Int64("mcp-max-budget", -1, "the key's MCP budget ceiling in credits (default: ENRICHQ_MCP_MAX_BUDGET)")
	mcpDaily := fs.Int64("mcp-max-daily-budget", -1, "what the key may commit through MCP in a UTC day, in credits (default: ENRICHQ_MCP_MAX_DAILY_BUDGET, else 5 times its MCP budget ceiling)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	cfg, err := config.APIFromEnv(getenv)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxConns: 2, MigrateURL: cfg.MigrateDatabaseURL})
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
		if strings.TrimSpace(*tenant) == "" {
			return errors.New("api keys create: --tenant is required")
		}
		scopes, err := domain.ParseScopes(*scope)
		if err != nil {
			return fmt.Errorf("api keys create: --scope: %w", err)
		}
		nk := store.NewAPIKey{Tenant: *tenant, Name: *name, Scopes: scopes}
		ceiling := "the MCP budget ceiling of ENRICHQ_MCP_MAX_BUDGET"
		if *mcpMax >= 0 {
			nk.MCPMaxBudget = mcpMax
			ceiling = fmt.Sprintf("an MCP budget ceiling of %d credits", *mcpMax)
		} else if *mcpMax != -1 {
			return fmt.Errorf("api keys create: --mcp-max-budget %d: want a whole number of credits >= 0", *mcpMax)
		}
		if *mcpDaily >= 0 {
			nk.MCPMaxDailyBudget = mcpDaily
			ceiling += fmt.Sprintf(", a daily MCP ceiling of %d credits", *mcpDaily)
		} else if *mcpDaily != -1 {
			return fmt.Errorf("api keys create: --mcp-max-daily-budget %d: want a whole number of credits >= 0", *mcpDaily)
		}
		k, key, err := st.NewAPIKey(ctx, nk)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "key %s created for tenant %q with scopes %s and %s; it is shown once, store it now:\n", k.ID, k.Tenant, scopeList(k.Scopes), ceiling)
		fmt.Fprintln(stdout, key)
		return nil
	case "list":
		var keys []store.APIKey
		if *tenant == "" {
			keys, err = st.AllAPIKeys(ctx)
		} else {
			keys, err = st.ListAPIKeys(ctx, *tenant)
		}
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTENANT\tNAME\tPREFIX\tSCOPES\tMCP MAX BUDGET\tMCP MAX DAILY\tCREATED\tLAST USED\tREVOKED")
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s…\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Tenant, k.Name, k.Prefix, scopeList(k.Scopes),
				orDefault(k.MCPMaxBudget), orDefault(k.MCPMaxDailyBudget),
				k.CreatedAt.Format("2006-01-02 15:04"), when(k.LastUsedAt), when(k.RevokedAt))
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

// scopeList writes scopes as --scope takes them: read,submit.
func scopeList(scopes []domain.Scope) string {
	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = string(s)
	}
	return strings.Join(names, ",")
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format("2006-01-02 15:04")
}

// orDefault is a key's own ceiling, or "default".
func orDefault(v *int64) string {
	if v == nil {
		return "default"
	}
	return fmt.Sprint(*v)
}
