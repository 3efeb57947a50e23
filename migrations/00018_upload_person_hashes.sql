-- The people a stored upload names, searchable by an erasure however the
-- file wrote them (any case, a URL with www. or a trailing slash, inside an
-- .xlsx's zip or a UTF-16 file): the keyed hashes (HMAC-SHA256 under the
-- erasure key, their first 16 bytes) of each row's normalised identities,
-- concatenated. NULL: stored while no erasure key was set; an erasure then
-- searches the file's bytes only.

-- +goose Up
ALTER TABLE uploads ADD COLUMN person_hashes bytea;

-- +goose Down
ALTER TABLE uploads DROP COLUMN person_hashes;
