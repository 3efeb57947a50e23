package ingest

import (
	"io"
	"unicode/utf8"
)

// jsonGuard fails past maxTotal bytes and on bytes that are not UTF-8.
type jsonGuard struct {
	r        io.Reader
	total    int64
	maxTotal int64
	utf8     utf8Check
	err      error
}

func (g *jsonGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if rem := g.maxTotal - g.total + 1; int64(len(p)) > rem {
		p = p[:max(rem, 1)]
	}
	n, err := g.r.Read(p)
	g.total += int64(n)
	switch {
	case g.total > g.maxTotal:
		g.err = errUploadTooLarge
	case !g.utf8.write(p[:n]) || err == io.EOF && g.utf8.n > 0:
		g.err = errNotUTF8
	default:
		return n, err
	}
	return 0, g.err
}

// utf8Check validates UTF-8 written to it in pieces.
type utf8Check struct {
	pend [utf8.UTFMax]byte // an incomplete rune at the end of the last piece
	n    int
	off  int64 // offset of the next byte
	bad  int64 // offset of the first invalid byte
}

func (c *utf8Check) write(b []byte) bool {
	for len(b) > 0 {
		if c.n > 0 {
			k := copy(c.pend[c.n:], b)
			buf := c.pend[:c.n+k]
			if !utf8.FullRune(buf) {
				c.n += k
				c.off += int64(k)
				return true
			}
			r, size := utf8.DecodeRune(buf)
			if r == utf8.RuneError && size == 1 {
				c.bad = c.off - int64(c.n)
				return false
			}
			used := size - c.n
			b = b[used:]
			c.off += int64(used)
			c.n = 0
			continue
		}
		i := 0
		for i < len(b) && b[i] < utf8.RuneSelf {
			i++
		}
		b = b[i:]
		c.off += int64(i)
		if len(b) == 0 {
			break
		}
		if !utf8.FullRune(b) {
			c.n = copy(c.pend[:], b)
			c.off += int64(len(b))
			return true
		}
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			c.bad = c.off
			return false
		}
		b = b[size:]
		c.off += int64(size)
	}
	return true
}
