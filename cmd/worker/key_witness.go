package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/enrichq/enrichq/internal/jobs"
)

// keyWitnessEvery is how often the worker reads the keys of vendors whose
// answers carry no balance (jobs.Processor.WitnessKeys): a key left with a
// dead worker's lost calls and no run to read it is settled within it.
const keyWitnessEvery = time.Minute

// witnessKeys runs proc's key-wide usage witness every keyWitnessEvery until
// ctx ends. Every worker runs it: a reading holds the key's row, so two at
// once are one after the other, the second with nothing new to settle.
func witnessKeys(ctx context.Context, proc *jobs.Processor, log *slog.Logger) {
	t := time.NewTicker(keyWitnessEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := proc.WitnessKeys(ctx); err != nil {
			log.Warn("the vendor keys' usage not read", "err", err)
		} else if n > 0 {
			log.Info("lost calls settled by their keys' usage", "calls", n)
		}
	}
}
