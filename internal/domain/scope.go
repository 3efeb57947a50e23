package domain

import (
	"fmt"
	"strings"
)

// Scope is what an API key may do. A key holds one or more; each operation
// needs one (docs/api.md, "Scopes").
type Scope string

// The scopes.
const (
	// ScopeRead reads: a job's status, the job list, results, the feed, costs.
	ScopeRead Scope = "read"
	// ScopeSubmit spends: submit and estimate jobs, change budgets, cancel.
	ScopeSubmit Scope = "submit"
	// ScopeAdmin manages the tenant's keys (later: erasures, retention).
	ScopeAdmin Scope = "admin"
)

// Scopes lists every scope: what a key of ENRICHQ_API_KEYS holds.
var Scopes = []Scope{ScopeRead, ScopeSubmit, ScopeAdmin}

// DefaultKeyScopes are the scopes of a stored key created without --scope.
var DefaultKeyScopes = []Scope{ScopeRead, ScopeSubmit}

// Valid reports whether s is one of Scopes.
func (s Scope) Valid() bool {
	switch s {
	case ScopeRead, ScopeSubmit, ScopeAdmin:
		return true
	}
	return false
}

// ParseScopes reads a comma-separated list such as "read,submit": each
// scope once, in Scopes order. An empty list is an error: a key that can
// do nothing is a mistake.
func ParseScopes(list string) ([]Scope, error) {
	seen := map[Scope]bool{}
	for _, f := range strings.Split(list, ",") {
		s := Scope(strings.TrimSpace(f))
		if s == "" {
			continue
		}
		if !s.Valid() {
			return nil, fmt.Errorf("unknown scope %q: the scopes are read, submit and admin", string(s))
		}
		seen[s] = true
	}
	var out []Scope
	for _, s := range Scopes {
		if seen[s] {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scope given: name one or more of read, submit and admin")
	}
	return out, nil
}
