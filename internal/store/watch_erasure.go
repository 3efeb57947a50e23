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
	err = tx.QueryRow(ctx, eraseFromWatchesSQL,
		pgx.NamedArgs{"tenant": req.Tenant, "email": p.Email, "url": p.ProfileURL, "name": normText(p.Name),
			"company": normText(p.Company), "domain": p.Domain, "ids": ids}).Scan(&inputs, &changes)
	return inputs, changes, interpretError(err)
}

// eraseFromWatchesSQL finds the watch inputs of the person each way through
// an index that starts at the person's value (migrations/00010_feed_seek.sql),
// and those of the rows ids through their run (watch_runs' job_id), then
// checks the tenant on the inputs found by their watch (a subquery: a
// probe per input, never a read of every watch).
var eraseFromWatchesSQL = `
		WITH named AS MATERIALIZED (
			SELECT i.watch_id, i.n FROM watch_inputs i WHERE @email <> '' AND lower(i.email) = @email AND i.email IS NOT NULL
			UNION SELECT i.watch_id, i.n FROM watch_inputs i WHERE @email <> '' AND lower(i.snap_email) = @email AND i.snap_email IS NOT NULL
			UNION SELECT i.watch_id, i.n FROM watch_inputs i WHERE @url <> '' AND i.profile_url = @url AND i.profile_url IS NOT NULL
			UNION SELECT i.watch_id, i.n FROM watch_inputs i WHERE @url <> '' AND i.found_profile_url = @url AND i.found_profile_url IS NOT NULL
			UNION SELECT i.watch_id, i.n FROM watch_inputs i WHERE @name <> '' AND @company <> '' AND i.name IS NOT NULL AND i.company IS NOT NULL
				AND ` + nameNorm("i.name") + ` = @name AND ` + nameNorm("i.company") + ` = @company
			UNION SELECT i.watch_id, i.n FROM watch_inputs i WHERE @name <> '' AND @domain <> '' AND i.name IS NOT NULL AND i.domain IS NOT NULL
				AND ` + nameNorm("i.name") + ` = @name AND i.domain = @domain
			UNION SELECT wr.watch_id, r.input_row FROM job_rows r JOIN watch_runs wr ON wr.job_id = r.job_id WHERE r.id = ANY(@ids::bigint[])
		), gone AS (
			SELECT i.watch_id, i.n FROM named x
			JOIN watch_inputs i ON i.watch_id = x.watch_id AND i.n = x.n
			WHERE (SELECT w.tenant FROM watches w WHERE w.id = i.watch_id) = @tenant
			FOR UPDATE OF i
		), ch AS (
			DELETE FROM watch_changes c USING gone g WHERE c.watch_id = g.watch_id AND c.n = g.n RETURNING 1
		), inp AS (
			DELETE FROM watch_inputs i USING gone g WHERE i.watch_id = g.watch_id AND i.n = g.n RETURNING 1
		)
		SELECT (SELECT count(*) FROM inp), (SELECT count(*) FROM ch)`
