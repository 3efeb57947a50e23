package web

import (
	"fmt"
	"html/template"
	"net/http"
	"slices"

	"github.com/enrichq/enrichq/internal/service"
)

// jobVendors is what a job's page shows of its vendors: each stage's
// answers by vendor, and what each vendor was paid for the job.
type jobVendors struct {
	Answers template.HTML // "" before any answer
	Paid    template.HTML // "" before any paid call
	Total   int64
}

// jobVendorCharts draws the job's answers by stage and vendor and its
// credits by vendor.
func (u *UI) jobVendorCharts(r *http.Request, p service.Principal, id string) (jobVendors, error) {
	var out jobVendors
	answers, err := u.svc.JobAnswers(r.Context(), p, id)
	if err != nil {
		return out, err
	}
	var rows []chartRow
	for _, a := range answers {
		fig := fmt.Sprintf("%s found, %s no match", count(a.Found), count(a.NoMatch))
		if a.FromCache > 0 {
			fig += fmt.Sprintf(" (%s from earlier answers, free)", count(a.FromCache))
		}
		rows = append(rows, chartRow{Label: string(a.Stage) + " · " + a.Vendor, Figure: fig,
			Parts: []chartPart{{Class: "part-found", Value: a.Found}, {Class: "part-missed", Value: a.NoMatch}}})
	}
	if len(rows) > 0 {
		out.Answers = drawChart("Answers by stage and vendor", rows, []legendItem{{"part-found", "found"}, {"part-missed", "no match"}})
	}
	costs, err := u.svc.Costs(r.Context(), p, id)
	if err != nil {
		return out, err
	}
	names := make([]string, 0, len(costs.ByVendor))
	for n := range costs.ByVendor {
		names = append(names, n)
	}
	slices.Sort(names)
	rows = rows[:0]
	for _, n := range names {
		c := costs.ByVendor[n]
		out.Total += c.Credits
		fig := fmt.Sprintf("%s for %s calls", credits(c.Credits), count(c.Calls))
		if c.Unknown > 0 {
			fig += fmt.Sprintf(" (%s of calls whose outcome is unknown, counted at their most)", credits(c.Unknown))
		}
		rows = append(rows, chartRow{Label: n, Figure: fig, Parts: []chartPart{{Class: "part-spent", Value: c.Credits}}})
	}
	if len(rows) > 0 {
		out.Paid = drawChart("Credits paid to each vendor for this job", rows, nil)
	}
	return out, nil
}
