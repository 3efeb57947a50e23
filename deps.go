//go:build tools

package tools

import (
	_ "github.com/alicebob/miniredis/v2"
	_ "github.com/go-redis/redis_rate/v10"
	_ "github.com/google/uuid"
	_ "github.com/hibiken/asynq"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/pressly/goose/v3"
	_ "github.com/redis/go-redis/v9"
	_ "golang.org/x/time/rate"
)
