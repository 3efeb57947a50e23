package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/enrichq/enrichq/internal/store"
)

// Enqueuer hands chunks to asynq.
type Enqueuer struct {
	Client    *asynq.Client
	Inspector *asynq.Inspector
	Queue     string
	redis     redis.UniversalClient
}

// NewEnqueuer connects an Enqueuer to Redis.
func NewEnqueuer(opt asynq.RedisConnOpt, queue string) *Enqueuer {
	rc, _ := opt.MakeRedisClient().(redis.UniversalClient)
	return &Enqueuer{Client: asynq.NewClient(opt), Inspector: asynq.NewInspector(opt), Queue: queue, redis: rc}
}

// Close closes the Redis connections.
func (e *Enqueuer) Close() error {
	var err error
	if e.redis != nil {
		err = e.redis.Close()
	}
	return errors.Join(e.Client.Close(), e.Inspector.Close(), err)
}

// QueueLost reports whether Redis lost the queue since the last call
// (FLUSHALL, a restart without persistence, a failover to an empty
// replica): a marker key set once is gone. It is true on the first call
// against a Redis (and the chunks handed to the queue are then handed
// again: a no-op for those still there, by their task ids).
func (e *Enqueuer) QueueLost(ctx context.Context) (bool, error) {
	if e.redis == nil {
		return false, nil
	}
	set, err := e.redis.SetNX(ctx, QueueMarkerKey(e.Queue), time.Now().UTC().Format(time.RFC3339), 0).Result()
	if err != nil {
		return false, fmt.Errorf("queue marker: %w", err)
	}
	return set, nil
}

// QueueMarkerKey is the Redis key whose absence tells QueueLost that Redis
// lost the queue.
func QueueMarkerKey(queue string) string { return "enrichq:{" + queue + "}:marker" }

// Requeue hands a chunk to the queue under a new task id: its rows were
// taken back from a worker that was lost, whose task asynq may still hold
// as active (until asynq's own lease on it expires), and the same id would
// be refused as a duplicate meanwhile. A second run of a chunk claims only
// rows that are due, so a duplicate costs a claim that finds nothing.
func (e *Enqueuer) Requeue(ctx context.Context, ref store.ChunkRef) error {
	id := fmt.Sprintf("%s:r%d", TaskID(ref), time.Now().UnixNano())
	_, err := e.Client.EnqueueContext(ctx, NewChunkTask(ref), asynq.Queue(e.Queue), asynq.TaskID(id), asynq.MaxRetry(20), asynq.Timeout(30*time.Minute))
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil
	}
	return err
}

// Enqueue hands one chunk to the queue. A task with the same id still in
// Redis counts as success (the work is queued); an archived one (asynq gave
// up on it) is deleted and the chunk enqueued again: Postgres, not asynq,
// decides when a row has failed.
func (e *Enqueuer) Enqueue(ctx context.Context, ref store.ChunkRef) error {
	id := TaskID(ref)
	opts := []asynq.Option{asynq.Queue(e.Queue), asynq.TaskID(id), asynq.MaxRetry(20), asynq.Timeout(30 * time.Minute)}
	_, err := e.Client.EnqueueContext(ctx, NewChunkTask(ref), opts...)
	if !errors.Is(err, asynq.ErrTaskIDConflict) {
		return err
	}
	info, ierr := e.Inspector.GetTaskInfo(e.Queue, id)
	if ierr != nil || info.State != asynq.TaskStateArchived {
		return nil
	}
	if derr := e.Inspector.DeleteTask(e.Queue, id); derr != nil && !errors.Is(derr, asynq.ErrTaskNotFound) {
		return derr
	}
	_, err = e.Client.EnqueueContext(ctx, NewChunkTask(ref), opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil
	}
	return err
}

// DefaultRecheck is how long a chunk handed to the queue is trusted to be
// there before Dispatch hands it again (a no-op when it is: deterministic
// task ids).
const DefaultRecheck = time.Minute

// Dispatch hands the chunks that are due to the queue (store.DispatchChunks:
// at most window chunks of a job in the queue at once; jobID "" for every
// job) and returns how many it handed. A chunk whose enqueue fails has its
// stamp cleared, for the next dispatch.
func (e *Enqueuer) Dispatch(ctx context.Context, st *store.Store, jobID string, window int, recheck time.Duration, limit int) (int, error) {
	refs, err := st.DispatchChunks(ctx, jobID, window, recheck, limit)
	if err != nil {
		return 0, err
	}
	return e.enqueueAll(ctx, st, refs)
}

// DispatchNext hands the job's next never-dispatched chunk to the queue
// (store.DispatchNext): a worker calls it as a chunk of the job ends.
func (e *Enqueuer) DispatchNext(ctx context.Context, st *store.Store, jobID string) (int, error) {
	refs, err := st.DispatchNext(ctx, jobID, 1)
	if err != nil {
		return 0, err
	}
	return e.enqueueAll(ctx, st, refs)
}

func (e *Enqueuer) enqueueAll(ctx context.Context, st *store.Store, refs []store.ChunkRef) (int, error) {
	for i, ref := range refs {
		if err := e.Enqueue(ctx, ref); err != nil {
			if uerr := st.UnmarkEnqueued(context.WithoutCancel(ctx), refs[i:]); uerr != nil {
				err = errors.Join(err, uerr) // their stamps age out after recheck
			}
			return i, fmt.Errorf("enqueue chunk %d of job %s: %w", ref.Chunk, ref.JobID, err)
		}
	}
	return len(refs), nil
}
