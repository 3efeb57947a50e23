package ingest

import (
	"bytes"
	"io"
)

// sniffBytes is how much of the text the delimiter sniffing looks at: the
// header line, or its first part when it is longer.
const sniffBytes = 64 << 10

// sniffChunk is what the sniffing reads at a time: it reads at most this
// much past the header line.
const sniffChunk = 512

// delimiters a CSV may use, in the order that breaks a tie.
var delimiters = []byte{',', ';', '\t'}

// sniffDelimiter picks the delimiter of the text r: Excel's "sep=X" first
// line (which it drops) when present, else the one of comma, semicolon and
// tab that the header line holds most often outside quotes (comma when it
// holds none: a one-column file). It returns the text to parse, r with what
// the sniffing read put back.
func sniffDelimiter(r io.Reader) (byte, io.Reader, error) {
	var head []byte
	buf := make([]byte, sniffChunk)
	for len(head) < sniffBytes && bytes.IndexByte(head, '\n') < 0 {
		n, err := r.Read(buf)
		head = append(head, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, nil, err
		}
	}
	line, end := head, len(head)
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		line, end = head[:i], i+1
	}
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) == 5 && bytes.EqualFold(line[:4], []byte("sep=")) && bytes.IndexByte(delimiters, line[4]) >= 0 {
		return line[4], io.MultiReader(bytes.NewReader(head[end:]), r), nil
	}
	var counts [256]int
	quoted := false
	for _, c := range line {
		if c == '"' {
			quoted = !quoted
		} else if !quoted {
			counts[c]++
		}
	}
	best := byte(',')
	for _, d := range delimiters {
		if counts[d] > counts[best] {
			best = d
		}
	}
	return best, io.MultiReader(bytes.NewReader(head), r), nil
}
