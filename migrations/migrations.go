// Package migrations embeds enrichq's goose SQL migrations so every binary
// can apply them at start.
package migrations

import "embed"

// FS holds the *.sql migrations, applied in file-name order by goose.
//
//go:embed *.sql
var FS embed.FS
