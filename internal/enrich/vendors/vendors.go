// Package vendors registers every kind of vendor enrichq speaks to (see
// enrich.Kind): a program that builds adapters from the vendors file
// imports it for its side effect. Adding a kind is its own package and one
// line here.
package vendors

import (
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/pdl"
)

func init() {
	enrich.Register(enrich.SeedKind)
	enrich.Register(pdl.Kind)
}
