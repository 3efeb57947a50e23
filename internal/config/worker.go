package config

import (
	"errors"
	"time"
)

// Worker configures cmd/worker, which runs chunk tasks and member syncs.
type Worker struct {
	Common
	// Vendor: URL and Key are required. With a vendors file, the file's
	// first seed vendor, else its first vendor: its timeout is the member
	// syncs' (the worker calls every vendor of Vendors).
	Vendor Vendor
	// Vendors: every configured vendor (ENRICHQ_VENDORS_FILE), or the one
	// seed vendor of the ENRICHQ_VENDOR_* variables.
	Vendors Vendors
	// Concurrency is the chunks one worker process runs at once
	// (ENRICHQ_WORKER_CONCURRENCY, default 10, 1 to 1000). Its Postgres pool
	// holds Concurrency + 4 connections.
	Concurrency int
	// ShutdownTimeout bounds a graceful stop (ENRICHQ_SHUTDOWN_TIMEOUT, default 30s).
	ShutdownTimeout time.Duration
	// Platform: member sync tasks are handled when it is enabled.
	Platform Platform
	// ErasureKey is the API's ENRICHQ_ERASURE_KEY (a secret, at least 32
	// characters): with it, an answer for a person erased while their row
	// was in flight is dropped at save (the row stored skipped). Default
	// none: answers are not checked against the suppression list.
	ErasureKey string

	// Tuning, not read from the environment: 0 takes internal/jobs' default.

	// LookupConcurrency is the single lookups in flight per chunk (jobs.DefaultLookupConcurrency).
	LookupConcurrency int
	// MaxAttempts is the failed attempts after which a row ends failed (jobs.DefaultMaxAttempts).
	MaxAttempts int
	// Lease is how long a claimed row stays claimed without a heartbeat (jobs.DefaultLease).
	Lease time.Duration
	// ChunkSize is the members per sync task (jobs.DefaultChunkSize).
	ChunkSize int
	// QueuePoll is how often an idle worker looks at its empty queue (jobs.DefaultQueuePoll).
	QueuePoll time.Duration
}

func defaultWorker() Worker {
	return Worker{Common: defaultCommon(), Vendor: defaultVendor(), Concurrency: DefaultWorkerConcurrency,
		ShutdownTimeout: DefaultShutdownTimeout}
}

// WorkerFromEnv maps the environment (getenv: os.Getenv in production) onto
// the worker's defaults and validates the result.
func WorkerFromEnv(getenv func(string) string) (Worker, error) {
	c := defaultWorker()
	err := load(getenv, func(r *reader) {
		c.Common.read(r)
		c.Vendor.read(r)
		c.Vendors = readVendors(r, c.Vendor, true)
		if s, ok := c.Vendors.Seed(); ok && c.Vendors.File != "" {
			c.Vendor = s.legacy()
		} else if c.Vendors.File != "" && len(c.Vendors.List) > 0 {
			c.Vendor = c.Vendors.List[0].legacy()
		}
		r.int("ENRICHQ_WORKER_CONCURRENCY", &c.Concurrency)
		r.duration("ENRICHQ_SHUTDOWN_TIMEOUT", &c.ShutdownTimeout)
		c.Platform.read(r)
		r.str("ENRICHQ_ERASURE_KEY", &c.ErasureKey)
	}, func() error { return c.validate() })
	return c, err
}

func (c Worker) validate() error {
	vendor := c.Vendor.validate()
	if c.Vendors.File != "" {
		vendor = nil // the file's entries are checked as it is read
	}
	return errors.Join(
		c.Common.validate(),
		vendor,
		inRange("ENRICHQ_WORKER_CONCURRENCY", c.Concurrency, 1, 1000),
		c.Platform.validate(),
		checkErasureKey(c.ErasureKey),
	)
}
