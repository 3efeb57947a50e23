-- +goose Up
-- The persons a vendor said asked it to stop processing their data (an HTTP
-- 451): that vendor is never asked about them again. Kept per vendor (its
-- configured name) across tenants, since the vendor's word is about its own
-- processing; the person stands as a keyed hash of the normalised input the
-- vendor was asked, never in the clear.
CREATE TABLE vendor_suppressions (
    vendor      text        NOT NULL,
    person_hash bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (vendor, person_hash)
);

-- Each is counted in the audit trail.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_action_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_action_check CHECK (action IN ('results_download', 'feed_read', 'erasure', 'erasure_lifted',
    'retention_purge', 'retention_changed', 'key_created', 'key_revoked', 'budget_changed', 'limits_changed',
    'watch_created', 'watch_changed', 'watch_deleted', 'watch_run', 'watch_changes_read', 'vendor_suppressed'));

-- +goose Down
-- The audit log is append-only: its opt-out lines stay, unchecked.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_action_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_action_check CHECK (action IN ('results_download', 'feed_read', 'erasure', 'erasure_lifted',
    'retention_purge', 'retention_changed', 'key_created', 'key_revoked', 'budget_changed', 'limits_changed',
    'watch_created', 'watch_changed', 'watch_deleted', 'watch_run', 'watch_changes_read')) NOT VALID;
DROP TABLE vendor_suppressions;
