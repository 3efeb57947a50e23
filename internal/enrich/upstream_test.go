package enrich

import (
	"strings"
	"testing"
)

func TestClip(t *testing.T) {
	t.Parallel()
	if got := Clip("a\x00b\n\n c\xff", 100); got != "a b c" {
		t.Errorf("clip = %q", got)
	}
	if got := Clip(strings.Repeat("é", 10), 5); got != "éé..." {
		t.Errorf("clip = %q", got)
	}
}
