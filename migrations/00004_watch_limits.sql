-- +goose Up
-- A tenant's watch creations of the last hour, counted at every creation
-- (internal/watches' CreatesPerHour): the audit log keeps them, deleted
-- watches too; this index finds them without reading the tenant's log.
CREATE INDEX audit_log_watch_created ON audit_log (tenant, at) WHERE action = 'watch_created';

-- +goose Down
DROP INDEX audit_log_watch_created;
