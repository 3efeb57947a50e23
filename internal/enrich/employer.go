package enrich

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The rule of the right person: a lookup by a name at a company (a name or
// a website domain) asks for someone who works there now. Vendors match a
// company loosely (PDL matches any past employer), so an answer whose
// record names a current employer other than the one asked is someone who
// once worked there, or a namesake: not the person asked for, never
// delivered. Every adapter applies it to its own record's fields.

// Employer is what a vendor's record says of where the person works now:
// company websites (or domains) and company names, any of them empty.
type Employer struct {
	Websites []string
	Names    []string
}

// WorksAt reports whether the record's current employer e is the company
// q asks for (q.Company, a name or a website, or q.Domain). A record that
// names no current employer passes (nothing says it is someone else), and
// so does a query that names no company. Names compare without case,
// punctuation or legal forms ("Acme GmbH" is "acme"), one a prefix of the
// other's words ("acme" and "acme labs"); websites by host, a subdomain
// the same company; a name against a website by its host's label, one
// with blanks and hyphens squashed a prefix of the other ("globex" and
// globex-corp.com); and a name of three words or more against a one-word
// name or a host's label of its initials ("International Business
// Machines" is "IBM" and ibm.com; at two letters a namesake's employer
// would pass as easily, so "HP" is not "Hewlett Packard").
func WorksAt(q ProfileQuery, e Employer) bool {
	askedHost, askedName := websiteHost(q.Domain), ""
	if askedHost == "" {
		if askedHost = websiteHost(q.Company); askedHost == "" {
			askedName = companyName(q.Company)
		}
	}
	if askedHost == "" && askedName == "" {
		return true
	}
	named := false
	for _, s := range e.Websites {
		h := websiteHost(s)
		if h == "" {
			continue
		}
		named = true
		if askedHost != "" && sameHost(h, askedHost) || askedName != "" && (labelMatches(h, askedName) || knownAs(hostLabel(h), askedName)) {
			return true
		}
	}
	for _, n := range e.Names {
		c := companyName(n)
		if c == "" {
			continue
		}
		named = true
		if askedName != "" && (sameCompany(c, askedName) || knownAs(c, askedName)) ||
			askedHost != "" && (labelMatches(askedHost, c) || knownAs(hostLabel(askedHost), c)) {
			return true
		}
	}
	return !named
}

// websiteHost is s's host when s is a website or a domain ("acme.de",
// "https://www.acme.de/about"): lower case, without www.; "" otherwise.
func websiteHost(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || strings.ContainsAny(s, " \t@") {
		return ""
	}
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?#:"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "www."), ".")
	if !strings.Contains(s, ".") || strings.HasPrefix(s, ".") {
		return ""
	}
	return s
}

// sameHost: equal, or one a subdomain of the other (de.acme.com, acme.com).
func sameHost(a, b string) bool {
	return a == b || strings.HasSuffix(a, "."+b) || strings.HasSuffix(b, "."+a)
}

// hostLabel is the label a company is known by in its host: the one left
// of the public suffix, a two-letter country's second level skipped
// ("acme" of acme.com, acme.co.uk and shop.acme.de).
func hostLabel(h string) string {
	labels := strings.Split(h, ".")
	i := len(labels) - 2
	if i > 0 && len(labels[i]) <= 3 && len(labels[len(labels)-1]) == 2 { // acme.co.uk, acme.com.au
		i--
	}
	return labels[max(i, 0)]
}

// labelMatches: host's label and the company name c, squashed, one a
// prefix of the other.
func labelMatches(host, c string) bool {
	a, b := squash(hostLabel(host)), squash(c)
	return a != "" && b != "" && (strings.HasPrefix(a, b) || strings.HasPrefix(b, a))
}

// legalForms are the words a company's name may carry or not.
var legalForms = []string{"inc", "incorporated", "corp", "corporation", "co", "company", "llc", "llp", "ltd", "limited",
	"plc", "gmbh", "ag", "kg", "se", "sa", "sas", "sarl", "srl", "spa", "bv", "nv", "ab", "as", "oy", "pty", "kk"}

// companyName is a company's name as compared: lower case, words of
// letters and digits, without legal forms; "" when nothing is left.
func companyName(s string) string {
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	words = slices.DeleteFunc(words, func(w string) bool { return slices.Contains(legalForms, w) })
	return strings.Join(words, " ")
}

// sameCompany: equal names, or one the other's first words.
func sameCompany(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+" ") || strings.HasPrefix(b, a+" ")
}

// nameWords are the words a company's initials skip ("Bank of New York" is "BNY").
var nameWords = []string{"of", "and", "the", "for", "und", "de", "du", "des", "la", "le", "et"}

// initials is the first letters of a compared name's words, nameWords
// aside ("international business machines" is "ibm"); "" when fewer than
// three.
func initials(c string) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(c) {
		if slices.Contains(nameWords, w) {
			continue
		}
		r, _ := utf8.DecodeRuneInString(w)
		b.WriteRune(r)
		n++
	}
	if n < 3 {
		return ""
	}
	return b.String()
}

// knownAs: one of two compared names (or host labels) is the other's
// initials, of three letters or more.
func knownAs(a, b string) bool {
	ia, ib := initials(a), initials(b)
	return ia != "" && ia == squash(b) || ib != "" && ib == squash(a)
}

// squash drops what is not a letter or a digit.
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return -1
	}, strings.ToLower(s))
}
