package store

import "github.com/jackc/pgx/v5/pgxpool"

// Pool exposes the pool to the tests of internal/jobs.
//
// removed once internal/jobs tests use storetest
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
