package store

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// normText is normName of internal/jobs: lower case, spaces collapsed.
func normText(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// nameNorm is normText of internal/jobs in SQL: lower case, spaces collapsed.
func nameNorm(col string) string {
	return `lower(regexp_replace(btrim(coalesce(` + col + `, '')), '\s+', ' ', 'g'))`
}

// lockRows locks rows of job_rows (in id order) until the transaction ends.
func lockRows(ctx context.Context, tx pgx.Tx, ids []int64) error {
	_, err := tx.Exec(ctx, `SELECT 1 FROM job_rows WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
	return interpretError(err)
}

// kindOf is the input kind an erasure's identity would be uploaded as.
func kindOf(identity string) domain.InputKind {
	switch identity {
	case "email":
		return domain.InputEmail
	case "profile_url":
		return domain.InputProfileURL
	case "name_domain":
		return domain.InputNameDomain
	}
	return domain.InputNameCompany
}

func setList(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
