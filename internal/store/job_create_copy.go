package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// copyChunkBytes is how much COPY text the feed hands over at a time; a few
// chunks in flight bound the memory an upload holds, whatever its size.
const copyChunkBytes = 64 << 10 // pgconn's CopyData message; other sizes not measured

// copyChunksInFlight chunks wait between the feed and the COPY at most.
const copyChunksInFlight = 4

// jobRowsCopySQL copies a job's rows in COPY's text format (copyText).
const jobRowsCopySQL = `COPY job_rows (job_id, chunk, input_row, ref, input_kind, profile_url, name, company, domain, email, role,
	found_profile_url, state, state_reason, finished_at) FROM STDIN`

// rowFeed is what the feed of CreateJob found, once it has run.
type rowFeed struct {
	total int
	err   error
}

// copyJobRows runs feed on a goroutine of its own and streams the rows it
// adds into job_rows with one COPY, written by hand in COPY's text format:
// the upload is parsed while Postgres stores what came before, there is no
// round trip per batch, and no value goes through pgx's encoders (which cost
// over 40 % of the API's CPU on a 1M-row upload, most of it a failed scan
// of every text value and the error made of it; with the extras written so
// too, the API's CPU for that upload went 17.5 -> 5.0 s, docs/benchmarks.md).
// Each row's extras go to extras and, with digest, into the request's
// digest. An error of feed aborts the COPY: nothing is stored, and that
// error is returned.
func copyJobRows(ctx context.Context, tx pgx.Tx, jobID string, createdAt time.Time, chunkSize int, extras *inputExtras, digest *requestDigest,
	feed func(add func(NewRow) error) error) (total int, err error) {
	fctx, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	pipe := &chunkPipe{chunks: make(chan []byte, copyChunksInFlight)}
	fed := make(chan rowFeed, 1)
	go func() {
		w := &rowWriter{ctx: fctx, pipe: pipe, jobID: jobID, chunkSize: chunkSize, extras: extras, digest: digest,
			finished: createdAt.UTC().Format(time.RFC3339Nano)}
		err := feed(w.add)
		if err == nil {
			err = w.flush()
		}
		pipe.feedErr = err // read by the COPY after chunks is closed
		close(pipe.chunks)
		fed <- rowFeed{total: w.total, err: err}
	}()
	_, copyErr := tx.Conn().PgConn().CopyFrom(ctx, pipe, jobRowsCopySQL)
	stopFeed() // a failed COPY stops the feed at its next chunk
	f := <-fed
	// The feed's error is the answer, unless it is only the stop a failed
	// COPY gave it.
	stopped := copyErr != nil && ctx.Err() == nil && errors.Is(f.err, context.Canceled)
	if f.err != nil && !stopped {
		return 0, f.err
	}
	if copyErr != nil {
		return 0, fmt.Errorf("store: copy rows: %w", interpretError(copyErr))
	}
	return f.total, nil
}

// rowWriter turns the rows a feed adds into COPY text, in chunks of about
// copyChunkBytes.
type rowWriter struct {
	ctx       context.Context
	pipe      *chunkPipe
	jobID     string
	chunkSize int
	extras    *inputExtras
	digest    *requestDigest
	finished  string // a skipped row's finished_at, in COPY text
	buf       []byte
	total     int
}

func (w *rowWriter) add(r NewRow) error {
	if w.digest != nil {
		w.digest.row(r)
	}
	state, finished := domain.RowPending, ""
	if r.SkipReason != "" {
		state, finished = domain.RowSkipped, w.finished
		r = r.withoutPerson()
		w.extras.drop(r.InputRow)
	}
	if err := w.extras.add(r.InputRow, r.Extra); err != nil {
		return err
	}
	b := w.buf
	if b == nil {
		b = make([]byte, 0, copyChunkBytes+4<<10)
	}
	b = append(b, w.jobID...)
	b = append(b, '\t')
	b = strconv.AppendInt(b, int64(w.total/w.chunkSize), 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, int64(r.InputRow), 10)
	b = copyText(append(b, '\t'), r.Ref)
	b = copyText(append(b, '\t'), string(r.Kind))
	for _, v := range [...]string{r.ProfileURL, r.Name, r.Company, r.Domain, r.Email, r.Role, r.ProfileURL} {
		b = copyNullable(append(b, '\t'), v)
	}
	b = copyText(append(b, '\t'), string(state))
	b = copyText(append(b, '\t'), r.SkipReason)
	b = copyNullable(append(b, '\t'), finished)
	b = append(b, '\n')
	w.buf = b
	w.total++
	if len(b) >= copyChunkBytes {
		return w.flush()
	}
	return nil
}

// flush hands what is written to the COPY.
func (w *rowWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	select {
	case w.pipe.chunks <- w.buf:
		w.buf = nil
		return nil
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
}

// copyText appends v to b escaped for COPY's text format: a backslash,
// and the tab, newline and carriage return that would end a field or row.
func copyText(b []byte, v string) []byte {
	start := 0
	for i := 0; i < len(v); i++ {
		var esc byte
		switch v[i] {
		case '\\':
			esc = '\\'
		case '\t':
			esc = 't'
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		default:
			continue
		}
		b = append(b, v[start:i]...)
		b = append(b, '\\', esc)
		start = i + 1
	}
	return append(b, v[start:]...)
}

// copyNullable is copyText with "" as NULL.
func copyNullable(b []byte, v string) []byte {
	if v == "" {
		return append(b, `\N`...)
	}
	return copyText(b, v)
}

// errFeedFailed aborts a COPY whose feed failed. Its text is what Postgres
// logs: the feed's own error may quote the upload's cells.
var errFeedFailed = errors.New("the feed of the rows failed")

// chunkPipe is the io.Reader the COPY reads the feed's chunks from. Once
// the chunks are closed it ends with io.EOF, or errFeedFailed after the
// feed's error: an error makes pgconn abort the COPY.
type chunkPipe struct {
	chunks  chan []byte
	cur     []byte
	feedErr error
}

func (p *chunkPipe) Read(b []byte) (int, error) {
	for len(p.cur) == 0 {
		c, ok := <-p.chunks
		if !ok {
			if p.feedErr != nil {
				return 0, errFeedFailed
			}
			return 0, io.EOF
		}
		p.cur = c
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}
