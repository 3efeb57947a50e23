// Package jobs is enrichq's pipeline: task types and their handlers, the
// chunk run (claim, cache, call and money, single and bulk lookups, save, row
// transitions), submission, and the hand-off of chunks to the queue. It joins
// the upstream clients (enrich) to Postgres (store); Redis (asynq) only
// carries which chunk to process. The scheduler's periodic steps are in
// internal/maintenance.
package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"

	"github.com/enrichq/enrichq/internal/store"
)

// TypeChunk is the task type of "process chunk K of job J".
const TypeChunk = "enrich:chunk"

// ChunkPayload is the payload of a TypeChunk task: ids, never data.
type ChunkPayload struct {
	JobID string `json:"job_id"`
	Chunk int    `json:"chunk"`
}

// TaskID is the deterministic asynq task id of a chunk, so a second enqueue
// of the same work while the first is still queued is a no-op.
func TaskID(ref store.ChunkRef) string { return fmt.Sprintf("chunk:%s:%d", ref.JobID, ref.Chunk) }

// NewChunkTask builds the task of a chunk.
func NewChunkTask(ref store.ChunkRef) *asynq.Task {
	b, _ := json.Marshal(ChunkPayload{JobID: ref.JobID, Chunk: ref.Chunk})
	return asynq.NewTask(TypeChunk, b)
}

// parseChunkPayload decodes a TypeChunk payload.
func parseChunkPayload(t *asynq.Task) (store.ChunkRef, error) {
	var p ChunkPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.JobID == "" || p.Chunk < 0 {
		return store.ChunkRef{}, fmt.Errorf("bad %s payload %q: %w", TypeChunk, t.Payload(), errors.Join(err, asynq.SkipRetry))
	}
	return store.ChunkRef{JobID: p.JobID, Chunk: p.Chunk}, nil
}

// RetryLater is "not yet", not a failure: some rows of the chunk wait for a
// retry (backoff, Retry-After). asynq puts the task back for In without
// counting a failure (see IsFailure and RetryDelay); Postgres keeps the
// attempt count, so this cannot cycle forever.
type RetryLater struct{ In time.Duration }

func (e *RetryLater) Error() string { return fmt.Sprintf("rows wait for a retry in %s", e.In) }

// IsFailure is asynq's Config.IsFailure: RetryLater is not a failure.
func IsFailure(err error) bool {
	var rl *RetryLater
	return !errors.As(err, &rl)
}

// RetryDelay is asynq's Config.RetryDelayFunc: RetryLater's delay, else asynq's default.
func RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	var rl *RetryLater
	if errors.As(err, &rl) {
		return max(rl.In, 10*time.Millisecond)
	}
	// A failure (Postgres unreachable, say) is retried soon and often: the
	// task id stays taken while it waits, so the scheduler cannot hand the
	// chunk out sooner. 1 s doubling to 32 s, plus up to 1 s of jitter.
	return time.Duration(1<<min(n, 5))*time.Second + time.Duration(rand.Int64N(int64(time.Second)))
}
