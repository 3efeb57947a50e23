package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// eraseFromWatches removes the person from every watch of the tenant: the
// inputs that name them (or whose snapshot found them), those of the rows
// ids of a watch's runs, and their change lines. Run before the rows go
// (deletePersonRows withdraws the change lines' feed lines with the
// rows'). It returns the inputs and change lines removed.
func eraseFromWatches(ctx context.Context, tx pgx.Tx, req EraseRequest, ids []int64) (inputs, changes int64, err error) {
	p := req.Person
	err = tx.QueryRow(ctx, `
		WITH gone AS (
			SELECT i.watch_id, i.n FROM watch_inputs i JOIN watches w ON w.id = i.watch_id
			WHERE w.tenant = @tenant AND (
				(@email <> '' AND (lower(i.email) = @email OR lower(i.snap_email) = @email))
				OR (@url <> '' AND (i.profile_url = @url OR i.found_profile_url = @url))
				OR (@company <> '' AND `+nameNorm("i.name")+` = @name AND `+nameNorm("i.company")+` = @company)
				OR (@domain <> '' AND `+nameNorm("i.name")+` = @name AND i.domain = @domain)
				OR EXISTS (SELECT 1 FROM job_rows r JOIN watch_runs wr ON wr.job_id = r.job_id
					WHERE r.id = ANY(@ids) AND wr.watch_id = i.watch_id AND r.input_row = i.n))
			FOR UPDATE OF i
		), ch AS (
			DELETE FROM watch_changes c USING gone g WHERE c.watch_id = g.watch_id AND c.n = g.n RETURNING 1
		), inp AS (
			DELETE FROM watch_inputs i USING gone g WHERE i.watch_id = g.watch_id AND i.n = g.n RETURNING 1
		)
		SELECT (SELECT count(*) FROM inp), (SELECT count(*) FROM ch)`,
		pgx.NamedArgs{"tenant": req.Tenant, "email": p.Email, "url": p.ProfileURL, "name": normText(p.Name),
			"company": normText(p.Company), "domain": p.Domain, "ids": ids}).Scan(&inputs, &changes)
	return inputs, changes, interpretError(err)
}
