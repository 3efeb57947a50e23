package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// Text encodings of a CSV upload (the encoding option). EncodingAuto takes a
// byte order mark's word (UTF-8, UTF-16LE, UTF-16BE), else UTF-8 unless the
// bytes are not UTF-8, then Windows-1252.
const (
	EncodingAuto        = ""
	EncodingUTF8        = "utf-8"
	EncodingWindows1252 = "windows-1252"
	EncodingUTF16LE     = "utf-16le"
	EncodingUTF16BE     = "utf-16be"
)

// Encodings lists the encoding option's values, for messages and docs.
var Encodings = []string{EncodingUTF8, EncodingWindows1252, EncodingUTF16LE, EncodingUTF16BE}

// encodingAliases are other names people give the same encodings. ISO-8859-1
// is read as Windows-1252, as browsers do: the two differ only in control
// characters that a list does not hold.
var encodingAliases = map[string]string{
	"utf8": EncodingUTF8, "cp1252": EncodingWindows1252, "win1252": EncodingWindows1252,
	"iso-8859-1": EncodingWindows1252, "latin1": EncodingWindows1252, "latin-1": EncodingWindows1252,
	"utf16le": EncodingUTF16LE, "utf16be": EncodingUTF16BE,
}

// canonicalEncoding returns the encoding named by v, or false.
func canonicalEncoding(v string) (string, bool) {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "" || v == "auto" {
		return EncodingAuto, true
	}
	for _, e := range Encodings {
		if v == e {
			return e, true
		}
	}
	e, ok := encodingAliases[v]
	return e, ok
}

var (
	bomUTF16LE = []byte{0xFF, 0xFE}
	bomUTF16BE = []byte{0xFE, 0xFF}
)

// decodeText returns r as UTF-8 text, by enc (one of the Encoding
// constants). A byte order mark is dropped; with EncodingAuto it decides the
// encoding. Without one, EncodingAuto passes UTF-8 through and switches to
// Windows-1252 at the first byte that is not UTF-8, if every byte before it
// was ASCII (both read ASCII alike, so the whole text is then read as
// Windows-1252); after UTF-8 text it passes the bad bytes on, for the cell
// check to name the row and column.
func decodeText(r io.Reader, enc string) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 16) // large reads bypass it: it only holds the BOM's bytes
	head, err := br.Peek(3)
	if err != nil && err != io.EOF {
		return nil, err
	}
	bom := ""
	switch {
	case bytes.HasPrefix(head, utf8BOM):
		bom = EncodingUTF8
	case bytes.HasPrefix(head, bomUTF16LE):
		bom = EncodingUTF16LE
	case bytes.HasPrefix(head, bomUTF16BE):
		bom = EncodingUTF16BE
	}
	if enc == EncodingAuto {
		enc = bom
	}
	if bom == EncodingUTF8 && (enc == EncodingUTF8 || enc == EncodingWindows1252) {
		enc = EncodingUTF8 // a UTF-8 BOM says more than the option
		_, _ = br.Discard(len(utf8BOM))
	}
	switch enc {
	case EncodingAuto:
		return &autoText{r: br}, nil
	case EncodingUTF8:
		return br, nil
	case EncodingWindows1252:
		return transform.NewReader(br, charmap.Windows1252.NewDecoder()), nil
	case EncodingUTF16LE:
		return transform.NewReader(br, unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewDecoder()), nil
	case EncodingUTF16BE:
		return transform.NewReader(br, unicode.UTF16(unicode.BigEndian, unicode.UseBOM).NewDecoder()), nil
	}
	return nil, fmt.Errorf("ingest: unknown encoding %q", enc)
}

// autoText passes UTF-8 through and switches to Windows-1252 at the first
// byte that is not UTF-8 if all before it was ASCII (see decodeText).
type autoText struct {
	r      io.Reader
	in     [4096]byte
	pend   int  // bytes of an incomplete rune kept at the start of in
	utf8   bool // a multi-byte UTF-8 rune was seen: UTF-8 for good
	cp1252 bool // switched to Windows-1252
	out    []byte
	outBuf []byte
	err    error
}

func (a *autoText) Read(p []byte) (int, error) {
	for len(a.out) == 0 {
		if a.err != nil {
			return 0, a.err
		}
		n, err := a.r.Read(a.in[a.pend:])
		n += a.pend
		a.pend = 0
		if err != nil {
			a.err = err
		}
		a.fill(a.in[:n], err != nil)
	}
	k := copy(p, a.out)
	a.out = a.out[k:]
	return k, nil
}

// fill converts b into a.out; at a boundary an incomplete rune waits for the
// next read unless eof.
func (a *autoText) fill(b []byte, eof bool) {
	a.outBuf = a.outBuf[:0]
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c < utf8.RuneSelf:
			a.outBuf = append(a.outBuf, c)
			i++
		case a.cp1252:
			a.outBuf = utf8.AppendRune(a.outBuf, charmap.Windows1252.DecodeByte(c))
			i++
		case a.utf8:
			a.outBuf = append(a.outBuf, c) // not UTF-8 after UTF-8: the cell check names it
			i++
		case !utf8.FullRune(b[i:]) && !eof:
			a.pend = copy(a.in[:], b[i:])
			i = len(b)
		default:
			if r, size := utf8.DecodeRune(b[i:]); r != utf8.RuneError || size > 1 {
				a.utf8 = true
				a.outBuf = append(a.outBuf, b[i:i+size]...)
				i += size
				continue
			}
			a.cp1252 = true
		}
	}
	a.out = a.outBuf
}
