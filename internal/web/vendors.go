package web

import (
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/service"
)

type vendorsData struct {
	V          service.Vendors
	Spent      int64 // this month, every vendor, budget units
	Reserved   int64
	SpendChart template.HTML
	Segments   []segmentView
	Auto       bool // the order is learned per segment
	Out        map[string]bool
}

// segmentView is one segment with answers: its found-of-asked chart, and
// the order auto uses for each usual set of stages.
type segmentView struct {
	Name   string
	Words  string
	Asked  int64
	Chart  template.HTML
	Orders []service.SegmentOrder
}

// Vendors is where the tenant's money goes: this month's spend per vendor
// (budget units and the vendor's own credits), what each found of what it
// was asked per segment and stage, the order auto uses with its expected
// charge per row, the vendors out of the waterfall and the warnings.
func (u *UI) Vendors(w http.ResponseWriter, r *http.Request) {
	v, err := u.svc.Vendors(r.Context(), sessionFrom(r.Context()).Principal)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := vendorsData{V: v, Auto: len(v.Order) == 1 && v.Order[0] == "auto", Out: map[string]bool{}}
	rows := make([]chartRow, 0, len(v.Vendors))
	for _, vi := range v.Vendors {
		d.Spent += vi.Month.Spent
		d.Reserved += vi.Month.Reserved
		d.Out[vi.Name] = vi.Out != nil
		rows = append(rows, chartRow{Label: vi.Name, Figure: spendWords(vi),
			Parts: []chartPart{{Class: "part-spent", Value: vi.Month.Spent}, {Class: "part-reserved", Value: vi.Month.Reserved}}})
	}
	d.SpendChart = drawChart("Spend per vendor this month, in credits", rows,
		[]legendItem{{"part-spent", "spent"}, {"part-reserved", "reserved for calls under way"}})
	for _, sg := range v.Segments {
		if sg.Asked == 0 && len(sg.Rates) == 0 {
			// A kind without answers yet: its order still shows, from the priors.
			d.Segments = append(d.Segments, segmentView{Name: sg.Segment, Words: segmentWords(sg.Segment), Orders: sg.Orders})
			continue
		}
		var rr []chartRow
		for _, rate := range sg.Rates {
			if rate.Asked == 0 {
				continue
			}
			rr = append(rr, chartRow{Label: rate.Vendor + " · " + string(rate.Stage),
				Figure: fmt.Sprintf("%s found of %s asked (%s)", count(rate.Found), count(rate.Asked), share(rate.Found, rate.Asked)),
				Parts:  []chartPart{{Class: "part-found", Value: rate.Found}, {Class: "part-missed", Value: rate.Asked - rate.Found}}})
		}
		sv := segmentView{Name: sg.Segment, Words: segmentWords(sg.Segment), Asked: sg.Asked, Orders: sg.Orders}
		if len(rr) > 0 {
			sv.Chart = drawChart("Found and asked in "+sv.Words, rr, []legendItem{{"part-found", "found"}, {"part-missed", "asked, nothing found"}})
		}
		d.Segments = append(d.Segments, sv)
	}
	u.render(w, r, http.StatusOK, "vendors", page{Title: "Vendors", Nav: "vendors", Data: d})
}

// spendWords says a vendor's month: "1,200 credits spent (600 pdl credits), 40 calls".
func spendWords(vi service.VendorInfo) string {
	s := fmt.Sprintf("%s spent (%s %s credits), %s calls", credits(vi.Month.Spent), count(vi.Month.VendorCredits), vi.Name, count(vi.Month.Calls))
	if vi.Month.Reserved > 0 {
		s += ", " + credits(vi.Month.Reserved) + " reserved"
	}
	return s
}

// share is found ÷ asked as a whole percent.
func share(found, asked int64) string {
	if asked == 0 {
		return "—"
	}
	return fmt.Sprintf("%d %%", found*100/asked)
}

// segmentWords says a segment ("name_domain/fr") as a person would.
func segmentWords(seg string) string {
	kind, country, _ := strings.Cut(seg, "/")
	var k string
	switch domain.InputKind(kind) {
	case domain.InputProfileURL:
		k = "Profile URLs"
	case domain.InputEmail:
		k = "Emails"
	case domain.InputNameCompany:
		k = "Name and company"
	case domain.InputNameDomain:
		k = "Name and domain"
	default:
		k = kind
	}
	if country == "" {
		return k + ", any country"
	}
	return k + ", " + strings.ToUpper(country)
}

// stageList says stages joined: "profile + email".
func stageList(st []domain.Stage) string {
	s := make([]string, len(st))
	for i, x := range st {
		s[i] = string(x)
	}
	return strings.Join(s, " + ")
}

// perRow says an expected charge per row in credits, to two decimals.
func perRow(x float64) string { return fmt.Sprintf("%.2f credits", x) }

// orderWords says an order, marking the vendors out now: "acme-pdl (out
// now) → vendor".
func orderWords(order []string, out map[string]bool) string {
	s := make([]string, len(order))
	for i, n := range order {
		s[i] = n
		if out[n] {
			s[i] += " (out now)"
		}
	}
	return strings.Join(s, " → ")
}
