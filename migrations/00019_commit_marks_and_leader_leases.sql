-- What a failover (or any cut connection) needs to be survived without a
-- guess, and what leader election needs to work through a transaction pooler.
--
-- commit_marks: a statement that must not be applied twice (a credit
-- reservation, a chunk's save, a submitted job) writes a mark of its own, a
-- token made by the client, in its own transaction. When the answer to its
-- commit is lost, the client inserts the same token with fenced = true: the
-- insert waits for the first transaction if it still runs, and then either
-- finds its mark (it committed: ids is what it wrote) or stands in its place
-- (it did not, and now never can). Marks older than a day are pruned.
--
-- leader_leases: one row per leadership (the scheduler's sweeps). The holder
-- renews it by bumping version; another process takes it once it has seen
-- the same version, unchanged, for ttl_ms by its own clock. No session state:
-- it works through PgBouncer's transaction pooling, unlike a session advisory
-- lock.

-- +goose Up
CREATE TABLE commit_marks (
    token   uuid        PRIMARY KEY,
    ids     bigint[],                       -- what the marked statement wrote (ledger id, row ids)
    fenced  boolean     NOT NULL DEFAULT false, -- written by the client that lost the answer: the marked statement did not commit
    made_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX commit_marks_made_at ON commit_marks (made_at);

CREATE TABLE leader_leases (
    name       text        PRIMARY KEY,
    holder     text        NOT NULL,
    version    bigint      NOT NULL,
    ttl_ms     bigint      NOT NULL CHECK (ttl_ms > 0),
    renewed_at timestamptz NOT NULL DEFAULT now() -- for people: the database's clock decides nothing
);

-- +goose Down
DROP TABLE leader_leases;
DROP TABLE commit_marks;
