package service_test

// The kinds of vendor the vendors file names, as the programs register them.
import _ "github.com/enrichq/enrichq/internal/enrich/vendors"
