package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/enrichq/enrichq/internal/store"
)

// TypeSync is the task type of "sync chunk K of member sync job J".
const TypeSync = "platform:sync"

// SyncPayload is the payload of a TypeSync task: ids, never data.
type SyncPayload struct {
	JobID string `json:"job_id"`
	Chunk int    `json:"chunk"`
}

// SyncTaskID is the deterministic asynq task id of a member sync chunk, so a
// second enqueue of the same chunk while the first is queued is a no-op.
func SyncTaskID(ref store.ChunkRef) string {
	return fmt.Sprintf("platform:%s:%d", ref.JobID, ref.Chunk)
}

// NewSyncTask builds the task of a member sync chunk.
func NewSyncTask(ref store.ChunkRef) *asynq.Task {
	b, _ := json.Marshal(SyncPayload{JobID: ref.JobID, Chunk: ref.Chunk})
	return asynq.NewTask(TypeSync, b)
}

// enqueue hands one member sync chunk to the queue, like jobs.Enqueuer.Enqueue:
// an archived task of the same id (its retries used up) is replaced.
func (p *Platform) enqueue(ctx context.Context, ref store.ChunkRef) error {
	id := SyncTaskID(ref)
	opts := []asynq.Option{asynq.Queue(p.enq.Queue), asynq.TaskID(id), asynq.MaxRetry(20), asynq.Timeout(30 * time.Minute)}
	_, err := p.enq.Client.EnqueueContext(ctx, NewSyncTask(ref), opts...)
	if !errors.Is(err, asynq.ErrTaskIDConflict) {
		return err
	}
	info, ierr := p.enq.Inspector.GetTaskInfo(p.enq.Queue, id)
	if ierr != nil || info.State != asynq.TaskStateArchived {
		return nil
	}
	if derr := p.enq.Inspector.DeleteTask(p.enq.Queue, id); derr != nil && !errors.Is(derr, asynq.ErrTaskNotFound) {
		return derr
	}
	_, err = p.enq.Client.EnqueueContext(ctx, NewSyncTask(ref), opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil
	}
	return err
}
