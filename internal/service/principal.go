package service

import (
	"slices"

	"github.com/enrichq/enrichq/internal/domain"
)

// Principal is who calls: the tenant of the API key, the key, and what the
// key may do.
type Principal struct {
	// Tenant owns everything the call reads or makes; never empty (the
	// store refuses an empty one with ErrNoTenant).
	Tenant string
	// KeyID names the key without being it: a stored key's id, or "env:"
	// and a digest prefix for a key of ENRICHQ_API_KEYS.
	KeyID string
	// Scopes the key holds.
	Scopes []domain.Scope
	// MCPMaxBudget is the key's own ceiling on the budget of a job submitted
	// or raised through MCP; nil: the operator's default applies.
	MCPMaxBudget *int64
	// MCPMaxDailyBudget is the key's own ceiling on what it commits
	// through MCP in a UTC day; nil: the operator's default applies.
	MCPMaxDailyBudget *int64
}

// Has reports whether the principal holds scope.
func (p Principal) Has(scope domain.Scope) bool { return slices.Contains(p.Scopes, scope) }

// Require is nil when the principal holds scope, else a *ForbiddenError
// naming it.
func (p Principal) Require(scope domain.Scope) error {
	if !p.Has(scope) {
		return &ForbiddenError{Need: scope}
	}
	return nil
}
