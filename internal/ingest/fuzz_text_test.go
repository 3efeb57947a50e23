package ingest

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// The automatic decoding keeps UTF-8 as it is and reads a file whose first
// bad byte follows only ASCII as Windows-1252, whatever the read sizes.
func FuzzDecodeText(f *testing.F) {
	for _, s := range []string{"", "abc", "\xEF\xBB\xBFcompany\nAcmé\n", "caf\xe9,\x80\n", "Acmé,\xe9", "\xff\xfea\x00", "\xfe\xff\x00a", "a\xc3", "\xc3\xa9\xe9"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		whole := decodeAll(t, bytes.NewReader(data))
		bytewise := decodeAll(t, iotest.OneByteReader(bytes.NewReader(data)))
		if !bytes.Equal(whole, bytewise) {
			t.Fatalf("read sizes change the text: %q vs %q", whole, bytewise)
		}
		in := bytes.TrimPrefix(data, utf8BOM)
		if len(in) < len(data) { // the BOM says UTF-8: bad bytes are left for the cell check
			if !bytes.Equal(whole, in) {
				t.Fatalf("UTF-8 after a BOM changed: %q -> %q", in, whole)
			}
			return
		}
		if bytes.HasPrefix(data, bomUTF16LE) || bytes.HasPrefix(data, bomUTF16BE) {
			if !utf8.Valid(whole) {
				t.Fatalf("UTF-16 decoded to invalid UTF-8: %q", whole)
			}
			return
		}
		firstBad := -1
		for i := 0; i < len(in); {
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size == 1 {
				firstBad = i
				break
			}
			i += size
		}
		switch {
		case firstBad < 0:
			if !bytes.Equal(whole, in) {
				t.Fatalf("UTF-8 changed: %q -> %q", in, whole)
			}
		case isASCII(in[:firstBad]):
			want, _ := charmap.Windows1252.NewDecoder().Bytes(in)
			if !bytes.Equal(whole, want) {
				t.Fatalf("Windows-1252 read %q as %q, want %q", in, whole, want)
			}
		default:
			if !bytes.Equal(whole, in) {
				t.Fatalf("mixed text changed: %q -> %q", in, whole)
			}
		}
	})
}

func decodeAll(t *testing.T, r io.Reader) []byte {
	t.Helper()
	text, err := decodeText(r, EncodingAuto)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(text)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// The sniffing gives back every byte but Excel's sep= line, and picks a
// delimiter the header line holds, or a comma.
func FuzzSniffDelimiter(f *testing.F) {
	for _, s := range []string{"", "a,b\nc", "a;b;c\n1,2", "a\tb", "sep=;\r\na;b\n", "\"a;b\",c\n", strings.Repeat("x", 600) + ";y\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, rest, err := sniffDelimiter(iotest.HalfReader(bytes.NewReader(data)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rest)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(delimiters, d) < 0 {
			t.Fatalf("delimiter %q", d)
		}
		if !bytes.Equal(got, data) && !(bytes.HasSuffix(data, got) && bytes.HasPrefix(bytes.ToLower(data), []byte("sep="))) {
			t.Fatalf("the text changed: %q -> %q", data, got)
		}
		line, _, _ := bytes.Cut(data, []byte{'\n'})
		if d != ',' && bytes.IndexByte(line, d) < 0 {
			t.Fatalf("picked %q, which the header line %q lacks", d, line)
		}
	})
}

// A canonical domain is canonical again, lower-case ASCII with a dot.
func FuzzCanonicalDomain(f *testing.F) {
	for _, s := range []string{"acme.com", "https://www.Bücher.de:8080/x", "10.0.0.1", "[::1]", "a..b", "xn--bcher-kva.de", "ＡＣＭＥ.com", "www.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, msg := canonicalDomain(s)
		if msg != "" {
			if d != "" {
				t.Fatalf("%q: refused (%s) with a value %q", s, msg, d)
			}
			return
		}
		again, msg := canonicalDomain(d)
		if again != d || msg != "" {
			t.Fatalf("%q -> %q -> %q (%s)", s, d, again, msg)
		}
		if d != strings.ToLower(d) || !isASCII([]byte(d)) || !strings.Contains(d, ".") || len(d) > maxDomainBytes {
			t.Fatalf("%q -> %q is not a bare ASCII domain", s, d)
		}
	})
}
