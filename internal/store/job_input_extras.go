package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/spool"
)

// inputExtras gathers the extra columns of a job's input rows while its
// rows are copied, once per input row however many lookups the row makes
// (one per role), to copy them into job_input_extras after: one COPY runs
// at a time on a connection. They wait in a temporary file, not in memory,
// as the lines of that COPY in its text format; the file is made on the
// first row with extras.
type inputExtras struct {
	jobID string
	// folder is the spool folder the file is in: locked while the job is
	// made, swept (spool.Sweep) once a crash has left it, raw columns and all.
	folder *spool.Folder
	f      *os.File
	w      *bufio.Writer
	last   int // the last input row kept: a row's lookups come together
	n      int
	line   []byte // scratch
	json   []byte // scratch
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
	if x.f == nil {
		folder, err := spool.New("")
		if err != nil {
			return fmt.Errorf("store: extras file: %w", err)
		}
		f, err := os.CreateTemp(folder.Path, "enrichq-extras-")
		if err != nil {
			folder.Remove()
			return fmt.Errorf("store: extras file: %w", err)
		}
		x.folder, x.f, x.w = folder, f, bufio.NewWriterSize(f, 64<<10)
	}
	// A hand-written line, not json.Marshal: it cost a tenth of the API's
	// CPU on a 1M-row upload with one extra column.
	x.json = appendJSONObject(x.json[:0], extra)
	b := append(x.line[:0], x.jobID...)
	b = strconv.AppendInt(append(b, '\t'), int64(row), 10)
	b = append(copyText(append(b, '\t'), string(x.json)), '\n')
	x.line = b
	if _, err := x.w.Write(b); err != nil {
		return fmt.Errorf("store: extras file: %w", err)
	}
	x.last = row
	x.n++
	return nil
}

// copyTo copies what was kept into job_input_extras, straight from the
// file.
func (x *inputExtras) copyTo(ctx context.Context, tx pgx.Tx) error {
	if x.n == 0 {
		return nil
	}
	if err := x.w.Flush(); err != nil {
		return fmt.Errorf("store: extras file: %w", err)
	}
	if _, err := x.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("store: extras file: %w", err)
	}
	var r io.Reader = x.f
	if len(x.dropped) > 0 {
		r = &undroppedLines{r: bufio.NewReaderSize(x.f, 64<<10), dropped: x.dropped}
	}
	if _, err := tx.Conn().PgConn().CopyFrom(ctx, r, `COPY job_input_extras (job_id, input_row, extra) FROM STDIN`); err != nil {
		return fmt.Errorf("store: copy extras: %w", interpretError(err))
	}
	return nil
}

// remove deletes the file and its spool folder; call it on every path.
func (x *inputExtras) remove() {
	if x.f != nil {
		_ = x.f.Close()
	}
	x.folder.Remove()
}

// undroppedLines reads the lines of an extras file whose input rows are
// not dropped.
type undroppedLines struct {
	r       *bufio.Reader
	dropped map[int]bool
	cur     []byte
}

func (u *undroppedLines) Read(p []byte) (int, error) {
	for len(u.cur) == 0 {
		line, err := u.r.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return 0, io.EOF
		}
		if err != nil {
			return 0, fmt.Errorf("store: extras file: %w", err)
		}
		_, rest, _ := bytes.Cut(line, []byte{'\t'})
		num, _, ok := bytes.Cut(rest, []byte{'\t'})
		n, cerr := strconv.Atoi(string(num))
		if !ok || cerr != nil {
			return 0, errors.New("store: extras file: a malformed line")
		}
		if !u.dropped[n] {
			u.cur = line
		}
	}
	n := copy(p, u.cur)
	u.cur = u.cur[n:]
	return n, nil
}

// appendJSONObject appends m as a JSON object (in no particular order:
// jsonb keeps its own). Invalid UTF-8 becomes U+FFFD, as with json.Marshal.
func appendJSONObject(b []byte, m map[string]string) []byte {
	b = append(b, '{')
	first := true
	for k, v := range m {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(appendJSONString(b, k), ':')
		b = appendJSONString(b, v)
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
