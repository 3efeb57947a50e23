package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
)

// vendorsBody is the part of GET /v1/vendors the table shows.
type vendorsBody struct {
	Order    []string `json:"order"`
	Month    string   `json:"month"`
	Warnings []string `json:"warnings"`
	Vendors  []struct {
		Name        string   `json:"name"`
		Kind        string   `json:"kind"`
		CreditValue int64    `json:"credit_value"`
		Stages      []string `json:"stages"`
		Month       struct {
			Calls         int   `json:"calls"`
			Spent         int64 `json:"spent"`
			Reserved      int64 `json:"reserved"`
			VendorCredits int64 `json:"vendor_credits"`
		} `json:"month"`
		Out *struct {
			Reason string `json:"reason"`
			Until  string `json:"until"`
		} `json:"out"`
	} `json:"vendors"`
	Segments []struct {
		Segment string `json:"segment"`
		Asked   int64  `json:"asked"`
		Rates   []struct {
			Vendor string `json:"vendor"`
			Stage  string `json:"stage"`
			Asked  int64  `json:"asked"`
			Found  int64  `json:"found"`
		} `json:"rates"`
		Orders []struct {
			Stages         []string `json:"stages"`
			Order          []string `json:"order"`
			ExpectedCharge float64  `json:"expected_charge"`
		} `json:"orders"`
	} `json:"segments"`
	Truncated bool `json:"truncated"`
}

// runVendors prints where the tenant's money goes: this month's spend per
// vendor, found of asked per segment and stage, the order in use per
// segment with its expected charge per row, and the warnings; --json
// prints the API's body.
func runVendors(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "vendors", "vendors [--json]")
	asJSON := f.Bool("json", false, "print the API's body (GET /v1/vendors)")
	if _, err := f.parse(args, 0); err != nil {
		return helpOK(err)
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.getJSON(ctx, "/v1/vendors", nil, &raw); err != nil {
		return err
	}
	if *asJSON {
		_, err := fmt.Fprintf(e.stdout, "%s\n", strings.TrimSpace(string(raw)))
		return err
	}
	var v vendorsBody
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("vendors: the API sent a body that is not the vendors': %w", err)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "This month (from %s, UTC); order: %s. Credits are your budget's; OWN is the vendor's own credits.\n\n", v.Month, strings.Join(v.Order, " → "))
	fmt.Fprintln(tw, "VENDOR\tKIND\tSPENT (credits)\tOWN\tCALLS\tRESERVED\t1 OWN IS\tSTATE")
	for _, x := range v.Vendors {
		state := "in the waterfall"
		if x.Out != nil {
			state = fmt.Sprintf("out until %s: %s", x.Out.Until, oneLine(x.Out.Reason))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", x.Name, x.Kind, x.Month.Spent, x.Month.VendorCredits, x.Month.Calls,
			x.Month.Reserved, plural(x.CreditValue, "credit"), state)
	}
	fmt.Fprintln(tw, "\nSEGMENT\tVENDOR\tSTAGE\tFOUND\tASKED\tRATE")
	rates := 0
	for _, s := range v.Segments {
		for _, r := range s.Rates {
			if r.Asked == 0 {
				continue
			}
			rates++
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d%%\n", s.Segment, r.Vendor, r.Stage, r.Found, r.Asked, r.Found*100/r.Asked)
		}
	}
	if rates == 0 {
		fmt.Fprintln(tw, "(no answers observed yet)")
	}
	fmt.Fprintln(tw, "\nSEGMENT\tLOOKUPS\tORDER\tEXPECTED CHARGE PER ROW (credits)")
	for _, s := range v.Segments {
		for _, o := range s.Orders {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\n", s.Segment, strings.Join(o.Stages, "+"), strings.Join(o.Order, " → "), o.ExpectedCharge)
		}
	}
	if v.Truncated {
		fmt.Fprintln(tw, "(more segments have answers than the API lists)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, w := range v.Warnings {
		fmt.Fprintf(e.stdout, "warning: %s\n", w)
	}
	return nil
}

// plural says n of a unit: "1 credit", "2 credits".
func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
