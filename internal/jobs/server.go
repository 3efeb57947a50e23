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
	// TaskCheckInterval is how often an idle worker looks for a task in its
	// empty queue: asynq polls (0.5 to 1.5 times this), it does not block on
	// Redis. Default DefaultQueuePoll.
	TaskCheckInterval time.Duration
	// DelayedTaskCheckInterval is how often due retries move back to the
	// queue. Default DefaultRetryCheck.
	DelayedTaskCheckInterval time.Duration
}

const (
	// DefaultQueuePoll: a new job's first chunks are picked up within about
	// this. asynq's own default, 1s, made every job wait about a second
	// before its first chunk.
	DefaultQueuePoll = 100 * time.Millisecond
	// DefaultRetryCheck: rows waiting for a retry come back through asynq's
	// retry set, so it is checked often (asynq's default is 5s).
	DefaultRetryCheck = time.Second
)

// NewServer builds the asynq server of a worker, with RetryLater treated as
// "not yet" rather than a failure.
func NewServer(redis asynq.RedisConnOpt, cfg ServerConfig, log *slog.Logger) *asynq.Server {
	if cfg.TaskCheckInterval <= 0 {
		cfg.TaskCheckInterval = DefaultQueuePoll
	}
	if cfg.DelayedTaskCheckInterval <= 0 {
		cfg.DelayedTaskCheckInterval = DefaultRetryCheck
	}
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
