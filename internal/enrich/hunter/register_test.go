package hunter_test

import (
	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/enrich/hunter"
)

func init() { enrich.Register(hunter.Kind) }
