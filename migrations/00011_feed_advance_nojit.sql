-- The feed's advance without JIT (issue 40; docs/operations.md, "JIT").
--
-- results_feed_advance() reads the result tables' rows from the last
-- horizon (xact >= v_since): without fresh statistics that range is costed
-- at a third of each table, and the statement passed jit_above_cost as a
-- tenant grew. Compiling it took 0.1 to 2.5 s of every advance, one with
-- nothing to log included, and every feed page advances first (a page's p99
-- was 1.4 to 2.5 s at 100,000 rows). ALTER FUNCTION … SET adds the setting
-- to the function's own (work_mem stays).

-- +goose Up
ALTER FUNCTION results_feed_advance() SET jit = off;

-- +goose Down
ALTER FUNCTION results_feed_advance() RESET jit;
