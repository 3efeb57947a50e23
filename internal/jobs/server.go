package jobs

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
)

// ServerConfig tunes the asynq server of a worker.
type ServerConfig struct {
	Queue           string
	Concurrency     int
	ShutdownTimeout time.Duration
	// TaskCheckInterval and DelayedTaskCheckInterval: how often asynq polls
	// an empty queue and moves due retries back; tests shorten them.
	TaskCheckInterval        time.Duration
	DelayedTaskCheckInterval time.Duration
}

// NewServer builds the asynq server of a worker, with RetryLater treated as
// "not yet" rather than a failure.
func NewServer(redis asynq.RedisConnOpt, cfg ServerConfig, log *slog.Logger) *asynq.Server {
	return asynq.NewServer(redis, asynq.Config{
		Concurrency:              cfg.Concurrency,
		Queues:                   map[string]int{cfg.Queue: 1},
		IsFailure:                IsFailure,
		RetryDelayFunc:           RetryDelay,
		ShutdownTimeout:          cfg.ShutdownTimeout,
		TaskCheckInterval:        cfg.TaskCheckInterval,
		DelayedTaskCheckInterval: cfg.DelayedTaskCheckInterval,
		Logger:                   asynqLogger{log.With("component", "asynq")},
		LogLevel:                 asynq.WarnLevel,
	})
}

// asynqLogger routes asynq's logs to slog.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }
