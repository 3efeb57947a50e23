package httpapi

import (
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// defuseFormula neutralises a CSV cell a spreadsheet would run as a formula
// (CSV injection) by prefixing a ': a cell that starts with a tab or a CR,
// or whose first character after any leading white space, control or
// format characters is =, +, - or @ in any width (a spreadsheet trims the
// space, and Excel reads the full-width ＝ of an East Asian keyboard as =).
func defuseFormula(v string) string {
	if v == "" {
		return v
	}
	if c := v[0]; c > ' ' && c < 0x7f && c != '=' && c != '+' && c != '-' && c != '@' {
		return v // the common cell: a plain ASCII character first
	}
	if v[0] == '\t' || v[0] == '\r' {
		return "'" + v
	}
	for _, r := range v {
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			continue
		}
		if formulaStart(r) {
			return "'" + v
		}
		break
	}
	return v
}

// formulaStart is true when r, in its compatibility form (＝ and ﹦ are
// =, ＋ and ﹢ are +), starts a formula.
func formulaStart(r rune) bool {
	switch norm.NFKC.String(string(r)) {
	case "=", "+", "-", "@":
		return true
	}
	return false
}
