-- Speed (issue 5): a row's claim and its save update the row in place (HOT,
-- heap-only tuple updates) instead of adding entries to its indexes.
--
-- A row is updated twice per chunk: claimed (pending -> in_flight, with a
-- lease) and saved (in_flight -> a terminal state). Postgres can only update
-- a row without touching its indexes when no indexed column changes (the
-- columns of an index's WHERE included) and the new version fits on the same
-- page. Three partial indexes named the state, and one of them lease_until:
-- every claim and every save added an entry to each of four indexes, and
-- their pages filled with entries of dead versions that inserts then had to
-- clean up. Index maintenance was the largest part of a chunk's save.
--
-- What they answered is now found another way:
-- * job_rows_open_chunk (the claimable rows of a chunk): job_rows_chunk, on
--   (job_id, chunk) alone; a chunk's hundred rows, finished ones included, are
--   a short scan.
-- * job_rows_lease (expired leases, for the sweep): the chunks with rows in
--   flight, from the per-chunk counts (job_chunk_counts_in_flight), then
--   their rows.
-- * job_rows_due (retry_wait rows by due time): no query used it any more;
--   due retries are found per chunk from the counts.
--
-- fillfactor 35 leaves two thirds of each page free when rows are inserted,
-- so a chunk's new versions fit beside the old ones (the dead versions are
-- pruned as pages are read): 84 % of the updates of a 100,000-row run were
-- HOT (53 % at fillfactor 50). A fresh upload takes about three times the
-- pages; a processed job about what it took before, when each update put its
-- new version on another page.
--
-- job_chunk_counts_in_flight names in_flight, so the counts' updates (one row
-- per chunk and statement) are no longer HOT: a small price, per chunk.
--
-- The migration builds job_rows_chunk under a lock that holds up claims and
-- saves (about 0.7 s per million rows).

-- +goose Up
CREATE INDEX job_rows_chunk ON job_rows (job_id, chunk);
CREATE INDEX job_chunk_counts_in_flight ON job_chunk_counts (job_id, chunk) WHERE in_flight > 0;
DROP INDEX job_rows_open_chunk;
DROP INDEX job_rows_lease;
DROP INDEX job_rows_due;
ALTER TABLE job_rows SET (fillfactor = 35);

-- +goose Down
ALTER TABLE job_rows RESET (fillfactor);
CREATE INDEX job_rows_open_chunk ON job_rows (job_id, chunk) WHERE state IN ('pending', 'in_flight', 'retry_wait');
CREATE INDEX job_rows_lease ON job_rows (lease_until) WHERE state = 'in_flight';
CREATE INDEX job_rows_due ON job_rows (next_attempt_at) WHERE state = 'retry_wait';
DROP INDEX job_chunk_counts_in_flight;
DROP INDEX job_rows_chunk;
