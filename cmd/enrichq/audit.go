package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
)

// runAudit prints the tenant's audit log after a position: a table, or
// ndjson with --json.
func runAudit(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "audit", "audit [--since SEQ] [--max N] [--json]")
	since := f.Int64("since", 0, "the audit position to read after: the seq of the last line read before (0: from the start)")
	maxLines := f.Int("max", 0, "stop after this many lines (0: read to the end)")
	asJSON := f.Bool("json", false, "one JSON object a line instead of a table")
	if _, err := f.parse(args, 0); err != nil {
		return helpOK(err)
	}
	if *since < 0 || *maxLines < 0 {
		return usagef("--since and --max must not be negative")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(e.stdout, 64<<10)
	if !*asJSON {
		fmt.Fprintf(w, "%-6s %-20s %-38s %-17s %-38s %s\n", "SEQ", "AT", "KEY", "ACTION", "SUBJECT", "ROWS")
	}
	n, next, err := c.readSince(ctx, "/v1/audit", "lines", *since, *maxLines, func(raw json.RawMessage) error {
		if *asJSON {
			w.Write(raw)
			_, err := w.WriteString("\n")
			return err
		}
		var l struct {
			Seq     int64  `json:"seq"`
			At      string `json:"at"`
			KeyID   string `json:"key_id"`
			Action  string `json:"action"`
			Subject string `json:"subject"`
			Rows    int64  `json:"rows"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			return fmt.Errorf("audit: the API sent a line that is not an audit line: %w", err)
		}
		if len(l.At) > 19 {
			l.At = l.At[:19] + "Z"
		}
		_, err := fmt.Fprintf(w, "%-6d %-20s %-38s %-17s %-38s %d\n", l.Seq, l.At, l.KeyID, l.Action, l.Subject, l.Rows)
		return err
	})
	if err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "%d lines; next: enrichq audit --since %d\n", n, next)
	return nil
}
