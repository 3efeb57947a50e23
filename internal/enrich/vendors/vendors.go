// Package vendors registers every kind of vendor enrichq speaks to (see
// enrich.Kind): a program that builds adapters from the vendors file
// imports it for its side effect. Adding a kind is its own package and one
// line here.
package vendors

import (
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/hunter"
	"github.com/enrichq/enrichq/internal/enrich/pdl"
	"github.com/enrichq/enrichq/internal/enrich/seed"
)

func init() {
	enrich.Register(seed.Kind)
	enrich.Register(pdl.Kind)
	enrich.Register(hunter.Kind)
}
