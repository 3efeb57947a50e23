package web

import (
	"bytes"
	"html/template"
	"strconv"
)

// A chart is drawn on the server as SVG: one row a bar, its label and its
// figure in HTML beside it (text stays readable on a phone; an SVG scaled
// down would shrink it), the bar an <svg> stretched to the row's width.
// Colours come from app.css by class: the Content-Security-Policy allows
// no inline style.

// chartRow is one bar: Parts are its segments, left to right, each a share
// of the chart's largest Total.
type chartRow struct {
	Label  string
	Figure string // what the bar says in words: "38 found of 40 asked"
	Parts  []chartPart
	Title  string // the bar's accessible name
}

// chartPart is a segment of a bar, of class Class (app.css colours it).
type chartPart struct {
	Class string
	Value int64
}

type chartRect struct {
	Class string
	X, W  string
}

type chartRowView struct {
	chartRow
	Rects []chartRect
}

var chartTmpl = template.Must(template.New("chart").Parse(`<div class="chart" role="group" aria-label="{{.Caption}}">
{{range .Rows}}<div class="chart-row"><span class="chart-label">{{.Label}}</span><svg class="chart-bar" viewBox="0 0 1000 20" preserveAspectRatio="none" role="img" aria-label="{{.Title}}"><rect class="chart-track" x="0" y="0" width="1000" height="20"/>{{range .Rects}}<rect class="{{.Class}}" x="{{.X}}" y="0" width="{{.W}}" height="20"/>{{end}}</svg><span class="chart-figure">{{.Figure}}</span></div>
{{end}}{{with .Legend}}<p class="chart-legend">{{range .}}<span class="key"><svg class="chart-key" viewBox="0 0 10 10" aria-hidden="true"><rect class="{{.Class}}" width="10" height="10"/></svg>{{.Label}}</span> {{end}}</p>{{end}}</div>`))

// legendItem names the class of a bar's segment.
type legendItem struct{ Class, Label string }

// drawChart renders rows as bars scaled to the largest row's total.
func drawChart(caption string, rows []chartRow, legend []legendItem) template.HTML {
	var most int64
	for _, r := range rows {
		var t int64
		for _, p := range r.Parts {
			t += max(p.Value, 0)
		}
		most = max(most, t)
	}
	views := make([]chartRowView, len(rows))
	for i, r := range rows {
		v := chartRowView{chartRow: r}
		var x float64
		for _, p := range r.Parts {
			if p.Value <= 0 || most == 0 {
				continue
			}
			w := float64(p.Value) * 1000 / float64(most)
			v.Rects = append(v.Rects, chartRect{Class: p.Class, X: strconv.FormatFloat(x, 'f', 1, 64), W: strconv.FormatFloat(w, 'f', 1, 64)})
			x += w
		}
		if v.Title == "" {
			v.Title = r.Label + ": " + r.Figure
		}
		views[i] = v
	}
	var b bytes.Buffer
	if err := chartTmpl.Execute(&b, struct {
		Caption string
		Rows    []chartRowView
		Legend  []legendItem
	}{caption, views, legend}); err != nil {
		panic(err) // the template is fixed: a programming error
	}
	return template.HTML(b.String()) //nolint:gosec // rendered by html/template above
}
