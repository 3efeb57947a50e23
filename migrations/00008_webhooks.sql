-- Completion webhooks: an optional callback URL per job, and one delivery
-- record per finished job, retried with backoff until the receiver says 2xx.

-- +goose Up
ALTER TABLE jobs ADD COLUMN callback_url text;

CREATE TABLE webhook_deliveries (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id          uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    event           text        NOT NULL DEFAULT 'job.finished',
    url             text        NOT NULL,
    state           text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_status     integer,              -- the receiver's HTTP status, NULL when no answer
    last_error      text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    UNIQUE (job_id, event)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';

-- +goose Down
DROP TABLE webhook_deliveries;
ALTER TABLE jobs DROP COLUMN callback_url;
