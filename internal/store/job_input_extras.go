package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// inputExtras gathers the extra columns of a job's input rows while its
// rows are copied, once per input row however many lookups the row makes
// (one per role), to copy them into job_input_extras after: one COPY runs
// at a time on a connection. They wait in a temporary file, not in memory;
// the file is made on the first row with extras.
type inputExtras struct {
	f    *os.File
	w    *bufio.Writer
	last int // the last input row kept: a row's lookups come together
	n    int
	// dropped are input rows whose extras are not copied (a lookup of the
	// row is of a suppressed person).
	dropped map[int]bool
}

// drop makes the extras of input row row go uncopied, kept already or not.
func (x *inputExtras) drop(row int) {
	if x.dropped == nil {
		x.dropped = map[int]bool{}
	}
	x.dropped[row] = true
	if row > x.last {
		x.last = row // nothing more is kept of it
	}
}

// add keeps the extras of input row row, unless the row's are kept already.
func (x *inputExtras) add(row int, extra map[string]string) error {
	if len(extra) == 0 || row <= x.last {
		return nil
	}
	b, err := json.Marshal(extra) // escapes newlines: one line a row
	if err != nil {
		return err
	}
	if x.f == nil {
		if x.f, err = os.CreateTemp("", "enrichq-extras-"); err != nil {
			return fmt.Errorf("store: extras file: %w", err)
		}
		x.w = bufio.NewWriterSize(x.f, 64<<10)
	}
	x.w.WriteString(strconv.Itoa(row))
	x.w.WriteByte('\t')
	x.w.Write(b)
	if err := x.w.WriteByte('\n'); err != nil {
		return fmt.Errorf("store: extras file: %w", err)
	}
	x.last = row
	x.n++
	return nil
}

// copyTo copies what was kept into job_input_extras for job jobID.
func (x *inputExtras) copyTo(ctx context.Context, tx pgx.Tx, jobID string) error {
	if x.n == 0 {
		return nil
	}
	if err := x.w.Flush(); err != nil {
		return fmt.Errorf("store: extras file: %w", err)
	}
	if _, err := x.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("store: extras file: %w", err)
	}
	src := &extrasSource{r: bufio.NewReaderSize(x.f, 64<<10), jobID: jobID, dropped: x.dropped}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"job_input_extras"}, []string{"job_id", "input_row", "extra"}, src); err != nil {
		return fmt.Errorf("store: copy extras: %w", interpretError(err))
	}
	return nil
}

// remove deletes the file; call it on every path.
func (x *inputExtras) remove() {
	if x.f != nil {
		_ = x.f.Close()
		_ = os.Remove(x.f.Name())
	}
}

// extrasSource is a pgx.CopyFromSource over inputExtras' file.
type extrasSource struct {
	r       *bufio.Reader
	jobID   string
	dropped map[int]bool
	row     []any
	err     error
}

func (s *extrasSource) Next() bool {
	for {
		ok := s.next()
		if !ok || !s.dropped[s.row[1].(int)] {
			return ok
		}
	}
}

func (s *extrasSource) next() bool {
	line, err := s.r.ReadBytes('\n')
	if errors.Is(err, io.EOF) && len(line) == 0 {
		return false
	}
	if err != nil {
		s.err = err
		return false
	}
	num, extra, ok := bytes.Cut(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\t'})
	n, cerr := strconv.Atoi(string(num))
	if !ok || cerr != nil {
		s.err = fmt.Errorf("store: extras file: a malformed line")
		return false
	}
	s.row = []any{s.jobID, n, string(extra)}
	return true
}

func (s *extrasSource) Values() ([]any, error) { return s.row, nil }
func (s *extrasSource) Err() error             { return s.err }
