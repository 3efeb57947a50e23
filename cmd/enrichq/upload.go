package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// storedUpload is the API's view of a stored upload (POST /v1/uploads).
type storedUpload struct {
	ID                  string    `json:"id"`
	Rows                int       `json:"rows"`
	LookupsWithoutRoles *int      `json:"lookups_without_roles"`
	RowsNeedingRoles    int       `json:"rows_needing_roles"`
	ExpiresAt           time.Time `json:"expires_at"`
	uploadInfo
}

func runUpload(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "upload", "upload FILE.csv|FILE.tsv|FILE.xlsx [--map field=Header]... [--encoding E] [--sheet S] [--json]")
	var opts jobOptions
	opts.register(f)
	asJSON := f.Bool("json", false, "print the API's answer as JSON instead of the id")
	pos, err := f.parse(args, 1)
	if err != nil {
		return helpOK(err)
	}
	if opts.roles != "" || opts.lookups != "" || opts.budget != "" || opts.maxAge != "" || opts.name != "" {
		return usagef("upload: --roles, --lookups, --budget, --max-age and --name belong to estimate and submit --upload ID")
	}
	q, err := opts.query()
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	body, ct, closeBody, err := openUpload(e, pos[0])
	if err != nil {
		return err
	}
	defer closeBody()
	resp, err := c.do(ctx, http.MethodPost, "/v1/uploads", q, body, http.Header{"Content-Type": {ct}})
	if err != nil {
		return fmt.Errorf("%s refused: %w", pos[0], err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var up storedUpload
	if err := json.Unmarshal(raw, &up); err != nil || up.ID == "" {
		return fmt.Errorf("the API's answer is not an upload: %s", oneLine(string(raw)))
	}
	if *asJSON {
		_, err := fmt.Fprintf(e.stdout, "%s\n", raw)
		return err
	}
	what := fmt.Sprintf("%d rows", up.Rows)
	if up.LookupsWithoutRoles != nil {
		what += fmt.Sprintf(", %d lookups", *up.LookupsWithoutRoles)
	}
	if up.RowsNeedingRoles > 0 {
		what += fmt.Sprintf(", %d company-only rows that need --roles", up.RowsNeedingRoles)
	}
	fmt.Fprintf(e.stderr, "stored upload %s: %s; kept until %s\n", up.ID, what, up.ExpiresAt.Local().Format(time.DateTime))
	if d := up.describe(); d != "" {
		fmt.Fprintln(e.stderr, d)
	}
	_, err = fmt.Fprintln(e.stdout, up.ID)
	return err
}
