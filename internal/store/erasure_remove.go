package store

import (
	"context"
	"encoding/hex"

	"github.com/jackc/pgx/v5"
)

// rewriteLedgerKeys replaces, in the credit ledger, the Idempotency-Key of
// the calls of rows ids (a digest of the input) by a keyed hash: the ledger
// keeps its money. A bulk call's line names no row but its chunk: every
// closed bulk line of the person's chunks is rewritten (its key digests the
// inputs of up to a hundred rows, theirs among them), and of their jobs'
// lines of before the chunk was kept, every one. It returns how many lines
// it rewrote.
func rewriteLedgerKeys(ctx context.Context, tx pgx.Tx, req EraseRequest, ids []int64) (int64, error) {
	var lids []int64
	var lkeys []string
	for _, q := range []string{ledgerOfRowsSQL, ledgerBulkOfChunksSQL, ledgerBulkOfJobsSQL} {
		ledger, err := tx.Query(ctx, q, ids)
		if err != nil {
			return 0, interpretError(err)
		}
		var lid int64
		var lkey string
		if _, err := pgx.ForEachRow(ledger, []any{&lid, &lkey}, func() error {
			lids = append(lids, lid)
			lkeys = append(lkeys, "erased-"+hex.EncodeToString(req.Hash(lkey))[:40])
			return nil
		}); err != nil {
			return 0, interpretError(err)
		}
	}
	return exec(ctx, tx, rewriteLedgerKeysSQL, lids, lkeys)
}

// rewriteLedgerKeysSQL sets the keys $2 of the ledger lines $1. The lines
// are reached by their primary key from an array the planner cannot see
// the length of: a join with thousands of keys would hash the ledger whole.
const rewriteLedgerKeysSQL = `UPDATE credit_ledger l SET idempotency_key = u.k, error = ''
		FROM unnest($1::bigint[], $2::text[]) AS u(id, k)
		WHERE l.id = u.id AND l.id = ANY(ARRAY(SELECT unnest($1::bigint[])))`

// ledgerOfRowsSQL, ledgerBulkOfChunksSQL and ledgerBulkOfJobsSQL are
// rewriteLedgerKeys' lines: the single calls of the rows $1, the closed bulk
// calls of their chunks (a probe of credit_ledger_job_chunk_bulk per chunk,
// then each line by its key), and the closed bulk calls of their jobs kept
// before lines named their chunk (chunk NULL, through the same index).
const (
	ledgerOfRowsSQL = `SELECT l.id, l.idempotency_key FROM credit_ledger l
		WHERE l.row_id = ANY($1::bigint[]) AND l.row_id IS NOT NULL AND l.idempotency_key NOT LIKE 'erased-%'
		ORDER BY l.id FOR UPDATE`
	ledgerBulkOfChunksSQL = `SELECT l.id, l.idempotency_key FROM credit_ledger l
		WHERE l.id = ANY(ARRAY(
			SELECT b.id FROM (SELECT DISTINCT r.job_id, r.chunk FROM job_rows r WHERE r.id = ANY(ARRAY(SELECT unnest($1::bigint[])))) c
			CROSS JOIN LATERAL (SELECT b.id FROM credit_ledger b WHERE b.job_id = c.job_id AND b.chunk = c.chunk AND b.row_id IS NULL) b))
		  AND l.status <> 'reserved' AND l.idempotency_key NOT LIKE 'erased-%'
		ORDER BY l.id FOR UPDATE`
	ledgerBulkOfJobsSQL = `SELECT l.id, l.idempotency_key FROM credit_ledger l
		WHERE l.job_id = ANY(ARRAY(SELECT DISTINCT r.job_id FROM job_rows r WHERE r.id = ANY($1::bigint[])))
		  AND l.row_id IS NULL AND l.chunk IS NULL AND l.status <> 'reserved' AND l.idempotency_key NOT LIKE 'erased-%'
		ORDER BY l.id FOR UPDATE`
)

// feedLine is a line of the results feed an erasure withdrew.
type feedLine struct {
	seq, row, source int64
	job, stage       string
}

// deletePersonRows removes, table by table, the rows ids with their feed
// lines, results and markers (first, so that each is counted), the cache
// entries and lookup claims of cacheKeys, the input extras the rows were
// the last of, and the platform members. It counts each in receipt by table
// and returns the feed lines withdrawn.
func deletePersonRows(ctx context.Context, tx pgx.Tx, tenant string, ids []int64, members []string, cacheKeys map[string]bool, receipt map[string]int64) ([]feedLine, error) {
	withdrawn, err := tx.Query(ctx, withdrawFeedLinesSQL, tenant, ids)
	if err != nil {
		return nil, interpretError(err)
	}
	var lines []feedLine
	var l feedLine
	if _, err := pgx.ForEachRow(withdrawn, []any{&l.seq, &l.job, &l.row, &l.stage, &l.source}, func() error {
		lines = append(lines, l)
		return nil
	}); err != nil {
		return nil, interpretError(err)
	}
	receipt["results_feed_log"] = int64(len(lines))
	for _, table := range []string{"profile_results", "email_results", "phone_results", "no_matches"} {
		n, err := exec(ctx, tx, deleteOfRowsSQL(table), ids)
		if err != nil {
			return nil, err
		}
		receipt[table] = n
	}
	keys := setList(cacheKeys)
	if receipt["lookup_cache"], err = exec(ctx, tx, deleteCacheKeysSQL, tenant, keys); err != nil {
		return nil, err
	}
	if _, err = exec(ctx, tx, deleteClaimKeysSQL, tenant, keys); err != nil {
		return nil, err
	}
	// An input row's extras go with its last row (job_input_extras: one line per input row).
	if receipt["job_input_extras"], err = exec(ctx, tx, deleteLastExtrasSQL, ids); err != nil {
		return nil, err
	}
	if receipt["job_rows"], err = exec(ctx, tx, `DELETE FROM job_rows WHERE id = ANY($1)`, ids); err != nil {
		return nil, err
	}
	if receipt["platform_members"], err = exec(ctx, tx, `DELETE FROM platform_members WHERE id = ANY($1::uuid[])`, members); err != nil {
		return nil, err
	}
	return lines, nil
}

// The statements of deletePersonRows that reach their rows by a key other
// than the rows' own ids, each through an index that starts at it. Rows are
// reached by a probe per row id (or key) that the planner cannot turn into
// a scan: a LATERAL subquery OFFSET 0 keeps from being flattened, or an
// array it cannot see the length of (ARRAY(SELECT unnest(…)): costed as a
// few). As "= ANY($ids)" with hundreds of ids, costed without fresh
// statistics, the feed's lines and no-match markers of the person's jobs,
// and the tenant's claims, were read whole.
const (
	// Feed lines by (job, row): results_feed_log_job_row, then the lines by seq.
	withdrawFeedLinesSQL = `DELETE FROM results_feed_log
		WHERE seq = ANY(ARRAY(SELECT f.seq FROM unnest($2::bigint[]) AS i(id)
			CROSS JOIN LATERAL (SELECT r.job_id FROM job_rows r WHERE r.id = i.id OFFSET 0) r
			CROSS JOIN LATERAL (SELECT l.seq FROM results_feed_log l WHERE l.job_id = r.job_id AND l.row_id = i.id OFFSET 0) f))
		  AND tenant = $1 AND kind <> 'deleted'
		RETURNING seq, job_id::text, row_id, stage, source_seq`
	// Cache entries and claims by their whole key, every stage: the primary key.
	deleteCacheKeysSQL = `DELETE FROM lookup_cache WHERE tenant = $1 AND stage = ANY('{profile,email,phone,verify}'::text[])
		AND input_key = ANY(ARRAY(SELECT unnest($2::text[])))`
	deleteClaimKeysSQL = `DELETE FROM lookup_claims WHERE tenant = $1 AND stage = ANY('{profile,email,phone,verify}'::text[])
		AND input_key = ANY(ARRAY(SELECT unnest($2::text[])))`
	// An input row's extras by (job, input row), when no other row of it
	// stays: job_input_extras' primary key and job_rows_input_row.
	deleteLastExtrasSQL = `DELETE FROM job_input_extras x
		USING (SELECT DISTINCT job_id, input_row FROM job_rows WHERE id = ANY($1::bigint[])) d
		WHERE x.job_id = d.job_id AND x.input_row = d.input_row
		  AND NOT EXISTS (SELECT 1 FROM job_rows r WHERE r.job_id = d.job_id AND r.input_row = d.input_row AND NOT r.id = ANY($1::bigint[]))`
)

// deleteOfRowsSQL deletes the results or markers of table (one with seq and
// row_id) of the rows $1: each row's by its row_id index, then by seq.
func deleteOfRowsSQL(table string) string {
	return `DELETE FROM ` + table + ` WHERE seq = ANY(ARRAY(SELECT x.seq FROM unnest($1::bigint[]) AS i(id)
		CROSS JOIN LATERAL (SELECT t.seq FROM ` + table + ` t WHERE t.row_id = i.id OFFSET 0) x))`
}

// deleteUploadsOf removes the tenant's stored uploads that hold the person.
// A stored upload is the file as sent: one that holds the person goes whole.
// It is found by the keyed hashes of the identities its rows name (the
// suppression list's keys, normalised as rows are: UploadFile.PersonHashes),
// or by a value of the person as bytes of the file (an extra column; an
// upload stored without an erasure key). A hash is found at any offset: one
// straddling two others would need 128 bits to agree by chance.
func deleteUploadsOf(ctx context.Context, tx pgx.Tx, req EraseRequest, k personKeys) (int64, error) {
	var blobs, people [][]byte
	for v := range k.values {
		blobs = append(blobs, []byte(v))
	}
	for s := range k.suppress {
		people = append(people, req.Hash(s)[:PersonHashBytes])
	}
	return exec(ctx, tx, `DELETE FROM uploads u WHERE u.tenant = $1
		AND (EXISTS (SELECT 1 FROM unnest($3::bytea[]) AS h(b) WHERE position(h.b IN u.person_hashes) > 0)
			OR EXISTS (SELECT 1 FROM unnest($2::bytea[]) AS v(b) WHERE position(v.b IN u.body) > 0))`,
		req.Tenant, blobs, people)
}

// addDeletedLines adds a deleted line for each line withdrawn, under the
// feed's turn (see results_feed_advance): positions handed out in the order
// they become visible. It returns how many it added.
func addDeletedLines(ctx context.Context, tx pgx.Tx, tenant string, lines []feedLine) (int64, error) {
	if _, err := tx.Exec(ctx, `SELECT 1 FROM results_feed_cursor WHERE singleton FOR UPDATE`); err != nil {
		return 0, interpretError(err)
	}
	seqs, jobs, rws, stages, sources := make([]int64, len(lines)), make([]string, len(lines)), make([]int64, len(lines)),
		make([]string, len(lines)), make([]int64, len(lines))
	for i, l := range lines {
		seqs[i], jobs[i], rws[i], stages[i], sources[i] = l.seq, l.job, l.row, l.stage, l.source
	}
	return exec(ctx, tx, `INSERT INTO results_feed_log (tenant, job_id, row_id, kind, stage, source_seq, deleted_seq)
		SELECT $1, u.job, u.row, 'deleted', u.stage, u.source, u.seq
		FROM unnest($2::bigint[], $3::uuid[], $4::bigint[], $5::text[], $6::bigint[]) AS u(seq, job, row, stage, source)
		ORDER BY u.seq`, tenant, seqs, jobs, rws, stages, sources)
}
