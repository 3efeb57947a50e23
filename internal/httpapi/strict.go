package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// The API is as strict as its document: openapi.json names every query
// parameter of a route, and which path parameters are UUIDs. A request with
// a query parameter the route does not have is a 400 naming it (as an
// unknown JSON field is), and one whose {id} cannot be an id is the 404 of
// an id that names nothing, without asking the database. The checks run
// after the key's (a request without a key is a 401 whatever its
// parameters). The web page's routes (/ui/, HTML for a person) and the
// platform's consent redirect (its parameters are the platform's, RFC 6749
// lets it add more) are left out.

// routeRule is what the document says of one route's parameters.
type routeRule struct {
	query    []string // the declared query parameters, sorted
	uuidPath []string // the path parameters of format uuid
	noun     string   // what an {id} names ("job"), for the 404
	open     bool     // no key: the checks run before the handler
}

// strictExempt are the routes whose query the document cannot close.
var strictExempt = map[string]bool{"GET /v1/platform/callback": true}

// routeRules reads the rules of every route from the OpenAPI document,
// keyed by the mux pattern ("GET /v1/jobs/{id}").
func routeRules(doc []byte) map[string]routeRule {
	var d struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]param `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		panic("httpapi: openapi.json: " + err.Error()) // embedded: any test finds it
	}
	rules := map[string]routeRule{}
	for path, item := range d.Paths {
		for method, raw := range item {
			if !slices.Contains(httpMethods, method) {
				continue
			}
			var op struct {
				Parameters []param           `json:"parameters"`
				Security   *[]map[string]any `json:"security"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				panic("httpapi: openapi.json: " + err.Error())
			}
			pattern := strings.ToUpper(method) + " " + path
			if path == "/" {
				pattern += "{$}"
			}
			if strings.HasPrefix(path, "/ui/") || path == "/" || strictExempt[pattern] {
				continue
			}
			rule := routeRule{noun: nounOf(path), open: op.Security != nil && len(*op.Security) == 0}
			for _, p := range op.Parameters {
				if p.Ref != "" {
					p = d.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
				}
				switch p.In {
				case "query":
					rule.query = append(rule.query, p.Name)
				case "path":
					if p.Schema.Format == "uuid" {
						rule.uuidPath = append(rule.uuidPath, p.Name)
					}
				}
			}
			slices.Sort(rule.query)
			rules[pattern] = rule
		}
	}
	return rules
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

type param struct {
	Ref    string `json:"$ref"`
	Name   string `json:"name"`
	In     string `json:"in"`
	Schema struct {
		Format string `json:"format"`
	} `json:"schema"`
}

// nounOf names what the {id} of path is: the collection before it.
func nounOf(path string) string {
	parts := strings.Split(path, "/")
	for i := len(parts) - 1; i > 0; i-- {
		if parts[i] == "{id}" {
			switch parts[i-1] {
			case "jobs":
				return "job"
			case "watches":
				return "watch"
			case "uploads":
				return "upload"
			case "erasures":
				return "erasure"
			case "sync":
				return "member sync"
			case "members":
				return "member"
			}
			return strings.TrimSuffix(parts[i-1], "s")
		}
	}
	return ""
}

// check returns the refusal of r by the rule, or nil.
func (rule routeRule) check(r *http.Request) error {
	for _, name := range rule.uuidPath {
		if _, err := uuid.Parse(r.PathValue(name)); err != nil {
			return errorf(http.StatusNotFound, "not_found", "no such %s", rule.noun)
		}
	}
	q := r.URL.Query()
	if len(q) == 0 {
		return nil
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if slices.Contains(rule.query, name) {
			continue
		}
		if len(rule.query) == 0 {
			return badParam(name, "%q is not a parameter here: this route takes no query parameters", clip(name))
		}
		return badParam(name, "%q is not a parameter here; the parameters are %s", clip(name), strings.Join(rule.query, ", "))
	}
	return nil
}

// checkRoute refuses r if the rule of its route (r.Pattern, set by the mux)
// does; ok false when it answered.
func (s *server) checkRoute(w http.ResponseWriter, r *http.Request) bool {
	rule, found := s.rules[r.Pattern]
	if !found {
		return true
	}
	if err := rule.check(r); err != nil {
		s.writeError(w, r, err)
		return false
	}
	return true
}

// openRoute wraps the handler of a route that needs no key in its checks.
func (s *server) openRoute(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.checkRoute(w, r) {
			next(w, r)
		}
	}
}
