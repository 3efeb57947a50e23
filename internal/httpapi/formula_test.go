package httpapi

import "testing"

func TestDefuseFormula(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"a=b", "a=b"},
		{"Acme AG", "Acme AG"},
		{"42", "42"},
		{"Zürich", "Zürich"},
		{"東京", "東京"},
		{" ", " "},
		{" x", " x"},
		// ASCII starts.
		{"=1+2", "'=1+2"},
		{"+1", "'+1"},
		{"-1", "'-1"},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\tx", "'\tx"},
		{"\rx", "'\rx"},
		// White space, control and format characters before the formula.
		{" =x", "' =x"},
		{"   =HYPERLINK(\"http://evil.example\")", "'   =HYPERLINK(\"http://evil.example\")"},
		{"\t=x", "'\t=x"},
		{"\r=x", "'\r=x"},
		{"\n=x", "'\n=x"},
		{"\r\n+x", "'\r\n+x"},
		{"\x00=x", "'\x00=x"},
		{"\x7f=x", "'\x7f=x"},
		{"\u00a0=x", "'\u00a0=x"}, // no-break space
		{"\u3000=x", "'\u3000=x"}, // ideographic space
		{"\u200b=x", "'\u200b=x"}, // zero-width space
		{"\ufeff@x", "'\ufeff@x"}, // byte order mark
		{" \t\n -1", "' \t\n -1"},
		// Full-width and small forms.
		{"＝1+2", "'＝1+2"},
		{"＋1", "'＋1"},
		{"－1", "'－1"},
		{"＠SUM(A1)", "'＠SUM(A1)"},
		{"﹦1", "'﹦1"},
		{"﹢1", "'﹢1"},
		{"﹣1", "'﹣1"},
		{"﹫x", "'﹫x"},
		{" ＝x", "' ＝x"},
		{"\u3000＝x", "'\u3000＝x"},
		// Not a formula start: a sign later, or a look-alike letter.
		{"x=1", "x=1"},
		{" x=1", " x=1"},
		{"Ａ=1", "Ａ=1"},
	} {
		if got := defuseFormula(c.in); got != c.want {
			t.Errorf("defuseFormula(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
