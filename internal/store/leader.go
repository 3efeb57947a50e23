package store

import (
	"context"
	"hash/fnv"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Leadership is a Postgres session advisory lock held on one connection:
// one scheduler at a time does the sweeps.
type Leadership struct {
	conn *pgxpool.Conn
	key  int64
}

// TryLeadership takes the named lock if it is free; nil, nil when another
// process holds it.
func (s *Store) TryLeadership(ctx context.Context, name string) (*Leadership, error) {
	h := fnv.New64a()
	h.Write([]byte("enrichq:" + name))
	key := int64(h.Sum64())
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, interpretError(err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil {
		conn.Release()
		return nil, interpretError(err)
	}
	if !ok {
		conn.Release()
		return nil, nil
	}
	return &Leadership{conn: conn, key: key}, nil
}

// Held reports whether the lock's connection is still alive (a Postgres
// restart drops the lock with the session).
func (l *Leadership) Held(ctx context.Context) bool {
	return l.conn.Ping(ctx) == nil
}

// Release gives the lock up.
func (l *Leadership) Release() {
	_, _ = l.conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, l.key)
	// The session holds the lock: never hand this connection back to the pool holding it.
	_ = l.conn.Conn().Close(context.Background())
	l.conn.Release()
}
