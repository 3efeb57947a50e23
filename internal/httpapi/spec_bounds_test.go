package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// queryParams are the query parameters of an operation of the document,
// $refs resolved.
func queryParams(t *testing.T, doc, op map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	params, _ := op["parameters"].([]any)
	for _, p := range params {
		pm := p.(map[string]any)
		if ref, ok := pm["$ref"].(string); ok {
			pm, _ = resolveRef(doc, ref).(map[string]any)
		}
		if pm["in"] == "query" {
			out = append(out, pm)
		}
	}
	return out
}

func number(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

// The document's bounds of every query parameter are the handlers': for each
// integer parameter, its minimum and maximum are served and one past either
// is a 400 naming it; every "limit" states its maximum; a value outside an
// enum or a pattern is a 400 naming the parameter. The document is walked,
// so a bound added there is checked against the handler here.
func TestQueryBoundsAreTheHandlers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pb := platformSetup(t, nil) // the platform's routes answer 503 without it
	doc := loadOpenAPI(t)
	rules := routeRules(openAPIDoc)
	checked := 0
	for name, op := range openAPIOperations(t, doc) {
		rule, ok := rules[name]
		if !ok || name == "POST /mcp" {
			continue
		}
		method, _, _ := strings.Cut(name, " ")
		if method != http.MethodGet {
			continue // the writes' options are checked with their bodies
		}
		base := pathOf(name, "", rule)
		for _, p := range queryParams(t, doc, op) {
			pname := p["name"].(string)
			schema, _ := p["schema"].(map[string]any)
			var probes []struct {
				value string
				ok    bool
			}
			add := func(v string, ok bool) {
				probes = append(probes, struct {
					value string
					ok    bool
				}{v, ok})
			}
			if pname == "limit" {
				if _, ok := schema["maximum"]; !ok {
					t.Errorf("%s: limit states no maximum", name)
				}
			}
			if schema["type"] == "integer" {
				if lo, ok := number(schema["minimum"]); ok {
					add(strconv.FormatInt(lo, 10), true)
					add(strconv.FormatInt(lo-1, 10), false)
				}
				if hi, ok := number(schema["maximum"]); ok {
					add(strconv.FormatInt(hi, 10), true)
					add(strconv.FormatInt(hi+1, 10), false)
				}
				add("1.5", false)
				add("ten", false)
			}
			if enum, ok := schema["enum"].([]any); ok {
				add("zz-none-of-them", false)
				add(enum[0].(string), true)
			}
			if _, ok := schema["pattern"]; ok {
				add("zz not it", false)
				if ex, ok := p["example"].(string); ok {
					add(ex, true)
				}
			}
			for _, pr := range probes {
				checked++
				query := url.Values{pname: {pr.value}}
				for _, other := range queryParams(t, doc, op) {
					if other["required"] == true && other["name"] != pname {
						query.Set(other["name"].(string), "00000000-0000-0000-0000-000000000000")
					}
				}
				on := b
				if strings.HasPrefix(base, "/v1/platform/") {
					on = pb.bundle
				}
				resp, data := on.call(t, method, base+"?"+query.Encode(), keyA, nil)
				refused := resp.StatusCode == http.StatusBadRequest
				if refused != !pr.ok {
					t.Errorf("%s ?%s=%s: %s %.300s, want it %s", name, pname, pr.value, resp.Status, data, map[bool]string{true: "served", false: "refused"}[pr.ok])
					continue
				}
				if refused {
					if e := apiErr(t, data); e.Code != "invalid_parameter" || len(e.Details) == 0 || e.Details[0].Column != pname {
						t.Errorf("%s ?%s=%s: %s, want invalid_parameter naming %s", name, pname, pr.value, data, pname)
					}
				}
			}
		}
	}
	if checked < 40 {
		t.Fatalf("only %d probes: the document was not walked", checked)
	}
}
