package httpapi

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/service"
	"github.com/enrichq/enrichq/internal/webhook"
)

// routePatterns returns the patterns routes.go registers, read from its
// source: every s.mux.Handle and s.mux.HandleFunc call.
func routePatterns(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "routes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc") || len(call.Args) == 0 {
			return true
		}
		lit, ok := call.Args[0].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			t.Errorf("routes.go: a %s pattern that is not a string literal cannot be checked against the OpenAPI document", sel.Sel.Name)
			return true
		}
		p, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatal(err)
		}
		patterns = append(patterns, p)
		return true
	})
	if len(patterns) == 0 {
		t.Fatal("routes.go registers no routes? the parser found none")
	}
	return patterns
}

var wildcard = regexp.MustCompile(`\{([^}]*)\}`)

// requestFor is a request that pattern "METHOD /path/{x}" matches.
func requestFor(t *testing.T, method, path string) *http.Request {
	t.Helper()
	p := wildcard.ReplaceAllStringFunc(path, func(string) string { return "00000000-0000-0000-0000-000000000000" })
	r, err := http.NewRequest(method, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func loadOpenAPI(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(openAPIDoc))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.") {
		t.Fatalf("openapi.json: openapi = %q, want 3.x", v)
	}
	return doc
}

// openAPIOperations returns "METHOD /path" → operation of the document.
func openAPIOperations(t *testing.T, doc map[string]any) map[string]map[string]any {
	t.Helper()
	paths, _ := doc["paths"].(map[string]any)
	ops := map[string]map[string]any{}
	for path, item := range paths {
		for key, op := range item.(map[string]any) {
			if !slices.Contains(httpMethods, key) {
				continue
			}
			ops[strings.ToUpper(key)+" "+path] = op.(map[string]any)
		}
	}
	return ops
}

// TestOpenAPICoversRoutes: every route of routes.go is an operation of
// openapi.json and every operation is a route.
func TestOpenAPICoversRoutes(t *testing.T) {
	t.Parallel()
	s := &server{mux: http.NewServeMux()}
	s.routes()
	doc := loadOpenAPI(t)
	ops := openAPIOperations(t, doc)

	registered := map[string]bool{}
	for _, p := range routePatterns(t) {
		method, path, ok := strings.Cut(p, " ")
		if !ok || method == "" || !strings.HasPrefix(path, "/") {
			t.Errorf("route %q has no method: it answers every method, which the document cannot say", p)
			continue
		}
		pattern := p
		if strings.HasSuffix(path, "/{$}") {
			// "/{$}" is the path "/" exactly: its OpenAPI form.
			path = strings.TrimSuffix(path, "{$}")
			p = method + " " + path
		}
		if strings.Contains(path, "...}") || (strings.HasSuffix(path, "/") && path != "/") || strings.Contains(path, "{$}") {
			t.Errorf("route %q: teach this test its OpenAPI form", p)
			continue
		}
		// The parse is the mux's truth: the pattern routes a request to itself.
		if _, got := s.mux.Handler(requestFor(t, method, path)); got != pattern {
			t.Errorf("route %q: the mux routes %s %s to %q", pattern, method, path, got)
		}
		registered[p] = true
		if _, ok := ops[p]; !ok {
			t.Errorf("route %q is not in openapi.json", p)
		}
	}
	for op := range ops {
		if !registered[op] {
			method, path, _ := strings.Cut(op, " ")
			_, got := s.mux.Handler(requestFor(t, method, path))
			t.Errorf("openapi.json has %q, which is no route (the mux routes it to %q)", op, got)
		}
	}

	// Each operation says what it answers, and path parameters are declared.
	for name, op := range ops {
		if r, _ := op["responses"].(map[string]any); len(r) == 0 {
			t.Errorf("%s: no responses", name)
		}
		if id, _ := op["operationId"].(string); id == "" {
			t.Errorf("%s: no operationId", name)
		}
		_, path, _ := strings.Cut(name, " ")
		for _, m := range wildcard.FindAllStringSubmatch(path, -1) {
			if !declaresParam(doc, op, m[1]) {
				t.Errorf("%s: path parameter %q not declared", name, m[1])
			}
		}
	}
}

func declaresParam(doc map[string]any, op map[string]any, name string) bool {
	params, _ := op["parameters"].([]any)
	for _, p := range params {
		pm := p.(map[string]any)
		if ref, ok := pm["$ref"].(string); ok {
			pm, _ = resolveRef(doc, ref).(map[string]any)
		}
		if pm["name"] == name && pm["in"] == "path" {
			return true
		}
	}
	return false
}

// resolveRef returns what a local $ref ("#/components/schemas/X") points at, or nil.
func resolveRef(doc map[string]any, ref string) any {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var cur any = doc
	for _, part := range strings.Split(rest, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

// TestOpenAPIDocument: every $ref resolves, and the schemas name exactly the
// JSON fields of the types the handlers write and read.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "$ref" {
					if resolveRef(doc, x.(string)) == nil {
						t.Errorf("%s: $ref %v does not resolve", at, x)
					}
					continue
				}
				walk(x, at+"/"+k)
			}
		case []any:
			for i, x := range v {
				walk(x, at+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(doc, "#")

	schemas := resolveRef(doc, "#/components/schemas").(map[string]any)
	errorObj := resolveRef(doc, "#/components/schemas/Error/properties/error").(map[string]any)
	for name, typ := range map[string]reflect.Type{
		"JobStatus":      reflect.TypeFor[jobStatus](),
		"RowCounts":      reflect.TypeFor[rowCounts](),
		"JobCredits":     reflect.TypeFor[jobCredits](),
		"JobList":        reflect.TypeFor[jobList](),
		"ResultLine":     reflect.TypeFor[resultLine](),
		"ResultsPage":    reflect.TypeFor[resultsPageJSON](),
		"FeedLine":       reflect.TypeFor[feedLine](),
		"FeedPage":       reflect.TypeFor[feedPage](),
		"FieldError":     reflect.TypeFor[ingest.FieldError](),
		"JobRequest":     reflect.TypeFor[ingest.JobRequest](),
		"JobRow":         reflect.TypeFor[ingest.RowIn](),
		"Estimate":       reflect.TypeFor[estimateBody](),
		"Upload":         reflect.TypeFor[service.Upload](),
		"StageCost":      reflect.TypeFor[service.StageCost](),
		"Account":        reflect.TypeFor[service.Account](),
		"AccountMonth":   reflect.TypeFor[service.AccountMonth](),
		"WebhookSecret":  reflect.TypeFor[service.WebhookSecret](),
		"Erasure":        reflect.TypeFor[service.Erasure](),
		"ErasureRequest": reflect.TypeFor[service.ErasureRequest](),
		"WatchRequest":   reflect.TypeFor[service.NewWatch](),
		"WatchPatch":     reflect.TypeFor[service.WatchPatch](),
		"AuditLine":      reflect.TypeFor[service.AuditLine](),
		"AuditPage":      reflect.TypeFor[service.AuditPage](),
		"Error.error":    reflect.TypeFor[errorJSON](),

		"WebhookPayload": reflect.TypeFor[webhook.Payload](),
		"WebhookJob":     reflect.TypeFor[webhook.Job](),

		"PlatformMember":        reflect.TypeFor[memberJSON](),
		"PlatformMemberList":    reflect.TypeFor[memberList](),
		"PlatformConnect":       reflect.TypeFor[connectJSON](),
		"PlatformConnected":     reflect.TypeFor[connectedJSON](),
		"PlatformMemberProfile": reflect.TypeFor[memberProfileJSON](),
		"PlatformSyncRequest":   reflect.TypeFor[syncRequest](),
		"PlatformSyncStatus":    reflect.TypeFor[syncStatus](),
	} {
		schema, _ := schemas[name].(map[string]any)
		if name == "Error.error" {
			schema = errorObj
		}
		props := schemaProperties(doc, schema)
		if len(props) == 0 {
			t.Errorf("schema %s: no properties", name)
			continue
		}
		want := jsonFields(typ)
		for _, f := range want {
			if _, ok := props[f]; !ok {
				t.Errorf("schema %s lacks %q, a field of %v", name, f, typ)
			}
		}
		for p := range props {
			if !slices.Contains(want, p) {
				t.Errorf("schema %s has %q, which %v does not", name, p, typ)
			}
		}
	}
}

// schemaProperties are the properties of an object schema, with those of
// the schemas it is allOf.
func schemaProperties(doc map[string]any, schema map[string]any) map[string]any {
	props := map[string]any{}
	own, _ := schema["properties"].(map[string]any)
	for k, v := range own {
		props[k] = v
	}
	all, _ := schema["allOf"].([]any)
	for _, part := range all {
		pm := part.(map[string]any)
		if ref, ok := pm["$ref"].(string); ok {
			pm, _ = resolveRef(doc, ref).(map[string]any)
		}
		for k, v := range schemaProperties(doc, pm) {
			props[k] = v
		}
	}
	return props
}

// jsonFields lists the JSON names of a struct's fields, as encoding/json
// writes them (embedded structs' fields are the struct's own).
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// TestOpenAPIServed: GET /openapi.json answers the document without a key,
// and the document's security says which routes want one.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, body := b.call(t, http.MethodGet, "/openapi.json", "", nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || !bytes.Equal(body, openAPIDoc) {
		t.Fatalf("GET /openapi.json: %s %q, %d bytes", resp.Status, resp.Header.Get("Content-Type"), len(body))
	}
	doc := loadOpenAPI(t)
	for name, op := range openAPIOperations(t, doc) {
		method, path, _ := strings.Cut(name, " ")
		path = wildcard.ReplaceAllString(path, "00000000-0000-0000-0000-000000000000")
		sec, declared := op["security"].([]any)
		open := declared && len(sec) == 0
		resp, _ := b.call(t, method, path, "", nil)
		if webSession(sec) {
			// The web page's session: a page sends to sign in, the rest is a 401.
			if resp.StatusCode != http.StatusUnauthorized && resp.Request.URL.Path != "/ui/signin" {
				t.Errorf("%s without a session: %s at %s, want 401 or the sign-in page", name, resp.Status, resp.Request.URL.Path)
			}
			continue
		}
		if got := resp.StatusCode == http.StatusUnauthorized; got == open {
			t.Errorf("%s without a key: %s, but the document says security %v", name, resp.Status, op["security"])
		}
	}
}

// webSession: the operation's security is the web page's session cookie.
func webSession(sec []any) bool {
	if len(sec) != 1 {
		return false
	}
	m, _ := sec[0].(map[string]any)
	_, ok := m["webSession"]
	return ok && len(m) == 1
}
