-- Speed (issue 5): the keys every row looks up, claims and writes compare bytes (COLLATE "C").
--
-- Each row of a job reads lookup_cache by (tenant, stage, input_key) twice, claims the
-- same key in lookup_claims, gives the claim up and writes the answer back to
-- lookup_cache: every one of those btree steps, and the sort of a chunk's keys, compares
-- text. Under the database's default collation that is a strcoll() per comparison; with
-- en_US.UTF-8 (the official postgres image's default, so docker-compose.yml's) the
-- ceiling benchmark ran 22 % slower end to end and 25 % slower on the write path than
-- with C.UTF-8 (three runs each, in turns). These keys are normalised inputs, tenants
-- and stages: only ever compared for equality, and ordered only so that every
-- statement locks claims in one order, which the code names explicitly (COLLATE "C",
-- store.claimKeyOrder), whatever these columns say.
--
-- The tables are not rewritten; their primary keys are rebuilt, under an ACCESS
-- EXCLUSIVE lock on each table: about 1.4 s per million cache entries on a 2-core
-- machine, while lookups, claims and saves wait. A database created with the C or
-- C.UTF-8 locale gains little.
--
-- results_feed_log (tenant, seq) compares a tenant per feed line too, but the
-- results_feed view reads that column, and changing it means dropping the view: the
-- grants ETL roles hold on it, and any view of theirs built on it, would go too.

-- +goose Up
ALTER TABLE lookup_cache
    ALTER COLUMN tenant TYPE text COLLATE "C",
    ALTER COLUMN stage TYPE text COLLATE "C",
    ALTER COLUMN input_key TYPE text COLLATE "C";
ALTER TABLE lookup_claims
    ALTER COLUMN tenant TYPE text COLLATE "C",
    ALTER COLUMN stage TYPE text COLLATE "C",
    ALTER COLUMN input_key TYPE text COLLATE "C";

-- +goose Down
ALTER TABLE lookup_cache
    ALTER COLUMN tenant TYPE text COLLATE "default",
    ALTER COLUMN stage TYPE text COLLATE "default",
    ALTER COLUMN input_key TYPE text COLLATE "default";
ALTER TABLE lookup_claims
    ALTER COLUMN tenant TYPE text COLLATE "default",
    ALTER COLUMN stage TYPE text COLLATE "default",
    ALTER COLUMN input_key TYPE text COLLATE "default";
