package ingest

import (
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/enrichq/enrichq/internal/domain"
)

// Lookup is one vendor lookup to run: one upload row, or one (company row ×
// role). Fields of the row that did not decide the kind are kept (validated
// and canonical) so results can echo them.
type Lookup struct {
	Row        int              // 1-based data row (CSV: header is row 0; JSON: index in "rows" + 1)
	Ref        string           // the caller's id, echoed in every result
	Kind       domain.InputKind // domain.InputProfileURL, InputEmail, InputNameCompany or InputNameDomain
	ProfileURL string           // canonical: https, lower-case host without "www.", no trailing slash, query or fragment
	Name       string           // the person, or the role title the lookup searches for
	Company    string           //
	Domain     string           // canonical (canonicalDomain): a bare lower-case ASCII host name
	Email      string           // lower-cased
	Role       string           // the role title: the row's own (a role column) or the job role it was expanded from
	// Extra are the CSV columns other than the known ones, or a JSON row's
	// "extra"; nil when none. The lookups of one row share it: read it,
	// never change it.
	Extra map[string]string
}

const (
	maxRefBytes   = 200 // ref
	maxShortChars = 200 // job name, role titles
)

// rowIn is one upload row after cell checks and trimming; "" is absent.
type rowIn struct {
	row                                   int
	ref, profileURL, name, company, email string
	firstName, lastName, domain, role     string
	extra                                 map[string]string
	badCell                               bool              // a known cell failed checkCell (its error is reported)
	cols                                  map[string]string // field -> the column that holds it, for messages; nil: the field's name
}

// setField sets field f of in to v (a table cell, or a mapped JSON "extra" value).
func (in *rowIn) setField(f, v string) {
	switch f {
	case colRef:
		in.ref = v
	case colProfileURL:
		in.profileURL = v
	case colName:
		in.name = v
	case colFirstName:
		in.firstName = v
	case colLastName:
		in.lastName = v
	case colCompany:
		in.company = v
	case colDomain:
		in.domain = v
	case colEmail:
		in.email = v
	case colRole:
		in.role = v
	}
}

// col names the column of field f in messages: its header in a file.
func (in *rowIn) col(f string) string {
	if c := in.cols[f]; c != "" {
		return c
	}
	return f
}

// checkCell checks one raw value: size, UTF-8 and control characters (tab is
// always allowed, a line feed only in free-text extra columns). It returns
// the trimmed value, or a message.
func checkCell(v string, maxBytes int, multiline bool) (string, string) {
	if len(v) > maxBytes {
		return "", fmt.Sprintf("value is %d bytes; the limit is %d", len(v), maxBytes)
	}
	if !utf8.ValidString(v) {
		return "", "value is not valid UTF-8 (save the file as UTF-8, or name its encoding: encoding=windows-1252)"
	}
	for _, r := range v {
		if unicode.IsControl(r) && r != '\t' && (r != '\n' || !multiline) {
			return "", fmt.Sprintf("value contains the control character %U", r)
		}
	}
	return strings.TrimSpace(v), ""
}

// canonicalProfileURL validates a profile URL and returns its canonical form,
// or a message saying what is wrong.
func canonicalProfileURL(raw string) (string, string) {
	const example = " (like https://platform.example/in/jane-doe)"
	u, err := url.Parse(raw)
	if err != nil {
		return "", "not a URL" + example
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		if u.Scheme == "" {
			return "", "not an absolute URL: it needs https://" + example
		}
		return "", fmt.Sprintf("scheme %q is not http or https", u.Scheme)
	}
	if u.User != nil {
		return "", "must not contain credentials (user:password@)"
	}
	host := strings.ToLower(u.Hostname())
	for strings.HasPrefix(host, "www.") {
		host = host[len("www."):]
	}
	if host == "" {
		return "", "has no host" + example
	}
	for _, r := range host {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '.' && r != '_' {
			return "", fmt.Sprintf("host %q is not a domain name", u.Hostname())
		}
	}
	if port := u.Port(); port != "" && port != "443" && (port != "80" || u.Scheme != "http") {
		host += ":" + port
	}
	path := strings.TrimRight(u.EscapedPath(), "/")
	if path == "" {
		return "", "has no path: it should point at one profile" + example
	}
	return "https://" + host + path, ""
}

// canonicalEmail validates a bare email address and lower-cases it.
func canonicalEmail(raw string) (string, string) {
	a, err := mail.ParseAddress(raw)
	if err != nil || a.Name != "" || a.Address != raw {
		return "", "not an email address (expected a bare address like jane@example.com)"
	}
	at := strings.LastIndexByte(raw, '@')
	if domain := raw[at+1:]; !strings.Contains(strings.Trim(domain, "."), ".") || strings.HasPrefix(domain, "[") {
		return "", fmt.Sprintf("domain %q is not an internet domain", domain)
	}
	return strings.ToLower(raw), ""
}

// expander validates rows, counts lookups and emits them; ParseCSV and
// ExpandRows share it.
type expander struct {
	lim     Limits
	roles   []string
	emit    func(Lookup) error
	strict  bool         // a record must have as many fields as the header (CSV)
	lookups int          // counted lookups, valid rows or not
	rows    int          // non-blank rows seen
	bad     int          // rows with errors
	errs    []FieldError // up to lim.MaxErrors
	full    bool         // an error beyond MaxErrors was dropped

	// deferRoles: a company-only row without roles makes no lookup and
	// counts in needRoles (Options.DeferRoles).
	deferRoles bool
	needRoles  int
}

// errStop is returned by expander methods when MaxErrors is exceeded; the
// caller stops reading and returns result().
var errStop = errors.New("ingest: more than MaxErrors errors")

// fail records errors of one row; it returns errStop once there are more
// errors than MaxErrors.
func (x *expander) fail(errs ...FieldError) error {
	if len(errs) == 0 {
		return nil
	}
	x.bad++
	for _, e := range errs {
		if len(x.errs) == x.lim.MaxErrors {
			x.full = true
			return errStop
		}
		x.errs = append(x.errs, e)
	}
	return nil
}

// row validates one row (errs are the cell errors already found in it) and
// emits its lookups while no error has been seen. It returns errStop, a
// too_large *Error, or emit's error.
//
// What a row looks up, by the first that applies: its profile URL; its email;
// its person (name, or first and last name) at its domain, else its company;
// its role title at its domain, else its company (and, with job roles, each
// of them too); with job roles and no title, each job role at its domain,
// else its company. A domain is sent in preference to a company name.
func (x *expander) row(in rowIn, errs []FieldError) error {
	x.rows++
	bad := func(col, msg string) { errs = append(errs, FieldError{Row: in.row, Column: col, Message: msg}) }
	name := in.name
	if name == "" && (in.firstName != "" || in.lastName != "") {
		name = strings.TrimSpace(in.firstName + " " + in.lastName)
	}
	l := Lookup{Row: in.row, Ref: in.ref, Name: name, Company: in.company, Role: in.role}
	if len(in.ref) > maxRefBytes {
		bad(in.col(colRef), fmt.Sprintf("ref is %d bytes; the limit is %d", len(in.ref), maxRefBytes))
	}
	if in.profileURL != "" {
		var msg string
		if l.ProfileURL, msg = canonicalProfileURL(in.profileURL); msg != "" {
			bad(in.col(colProfileURL), msg)
		}
	}
	if in.email != "" {
		var msg string
		if l.Email, msg = canonicalEmail(in.email); msg != "" {
			bad(in.col(colEmail), msg)
		}
	}
	if in.domain != "" {
		var msg string
		if l.Domain, msg = canonicalDomain(in.domain); msg != "" {
			bad(in.col(colDomain), msg)
		}
	}
	if in.role != "" {
		if msg := shortText(in.role); msg != "" {
			bad(in.col(colRole), "role "+msg)
		}
	}
	kindAt := domain.InputNameCompany
	if in.domain != "" {
		kindAt = domain.InputNameDomain
	}
	at := in.company != "" || in.domain != ""
	roles := x.roles
	n := 1
	expand := false
	switch {
	case in.profileURL != "":
		l.Kind = domain.InputProfileURL
	case in.email != "":
		l.Kind = domain.InputEmail
	case name != "" && at:
		l.Kind = kindAt
	case in.role != "" && at:
		l.Kind, l.Name = kindAt, in.role
		roles = otherRoles(in.role, x.roles)
		expand, n = len(roles) > 0, 1+len(roles)
	case at && !in.badCell && len(x.roles) == 0 && x.deferRoles:
		x.needRoles++
		expand, n = true, 0
	case at && !in.badCell:
		l.Kind = kindAt
		if len(x.roles) == 0 {
			col := in.col(colCompany)
			if in.company == "" {
				col = in.col(colDomain)
			}
			bad(col, `a company without a name needs roles (a role column, ?roles=... or "roles": [...])`)
		} else {
			expand, n = true, len(x.roles)
		}
	case in.badCell:
		// The kind is unknown; the cell's own error says why.
	case name != "" || in.role != "":
		bad(in.col(colCompany), "a name or role needs a company or domain (or give profile_url or email)")
	default:
		bad("", "the row has none of profile_url, email, a name or role with a company or domain, or a company or domain")
	}

	if x.lookups > x.lim.MaxLookups-n {
		return tooLarge("the upload has more than %d lookups (a row counts one, a company-only row one per role); split it into smaller jobs", x.lim.MaxLookups)
	}
	x.lookups += n
	if err := x.fail(errs...); err != nil || len(x.errs) > 0 || x.emit == nil {
		return err
	}
	// A fresh map per row, shared by the row's lookups (Lookup.Extra): a
	// copy per role cost 9 % of the API's CPU on a 1M-row upload with one role.
	l.Extra = in.extra
	if !expand {
		return x.emit(l)
	}
	if in.role != "" {
		if err := x.emit(l); err != nil {
			return err
		}
	}
	for _, role := range roles {
		l.Name, l.Role = role, role
		if err := x.emit(l); err != nil {
			return err
		}
	}
	return nil
}

// otherRoles are the job roles but title (case-insensitively).
func otherRoles(title string, roles []string) []string {
	var out []string
	for _, r := range roles {
		if !strings.EqualFold(r, title) {
			out = append(out, r)
		}
	}
	return out
}

// result is the outcome once reading stopped at row last (0: at the end).
func (x *expander) result(empty string, last int) error {
	switch {
	case x.full:
		return &Error{Code: CodeInvalidRows, Details: x.errs, Message: fmt.Sprintf(
			"more than %d errors; stopped reading at row %d; the first %d are listed", x.lim.MaxErrors, last, len(x.errs))}
	case len(x.errs) > 0:
		return &Error{Code: CodeInvalidRows, Details: x.errs, Message: invalidRowsMessage(x.bad, x.errs)}
	case x.rows == 0:
		return emptyUpload(empty)
	}
	return nil
}

func invalidRowsMessage(bad int, errs []FieldError) string {
	if errs[0].Row == 0 {
		return "the header is invalid"
	}
	if bad == 1 {
		return fmt.Sprintf("row %d is invalid", errs[0].Row)
	}
	return fmt.Sprintf("%d rows are invalid", bad)
}
