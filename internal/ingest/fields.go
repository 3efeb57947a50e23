package ingest

import (
	"fmt"
	"slices"
	"strings"
)

// Fields an upload's columns map to. The JSON row keys and our own CSV column
// names are the field names themselves.
const (
	colRef        = "ref"
	colProfileURL = "profile_url"
	colName       = "name"
	colFirstName  = "first_name"
	colLastName   = "last_name"
	colCompany    = "company"
	colDomain     = "domain"
	colEmail      = "email"
	colRole       = "role"
)

// Fields lists the fields a column can be mapped to, in the order messages
// and docs list them.
var Fields = []string{colRef, colProfileURL, colEmail, colName, colFirstName, colLastName, colCompany, colDomain, colRole}

// keyFields are the fields that can make a lookup; a header needs one.
var keyFields = []string{colProfileURL, colEmail, colName, colFirstName, colLastName, colCompany, colDomain, colRole}

// HeaderAliases are the headers, besides the field's own name, that CRM and
// spreadsheet exports (HubSpot, Salesforce, Pipedrive, Apollo, Excel
// templates) use for each field. A header matches when it equals one after
// normalising both (normHeader): case, blanks, "_", "-" and "." do not count.
var HeaderAliases = map[string][]string{
	colRef:        {"ID", "Record ID", "External ID", "CRM ID", "Contact ID", "Lead ID"},
	colProfileURL: {"Profile URL", "LinkedIn", "LinkedIn URL", "LinkedIn Profile", "LinkedIn Profile URL", "Person LinkedIn URL"},
	colEmail:      {"Email Address", "E-mail", "E-mail Address", "Work Email", "Business Email"},
	colName:       {"Full Name", "Contact Name", "Person Name"},
	colFirstName:  {"First Name", "Firstname", "Given Name"},
	colLastName:   {"Last Name", "Lastname", "Surname", "Family Name"},
	colCompany:    {"Company Name", "Account", "Account Name", "Organisation", "Organization", "Organisation Name", "Organization Name", "Employer"},
	colDomain:     {"Website", "Website URL", "Web Site", "Company Website", "Company Domain", "Company Domain Name", "Domain Name", "Homepage"},
	colRole:       {"Title", "Job Title", "Position", "Job Role"},
}

// aliasField maps a normalised alias to its field.
var aliasField = func() map[string]string {
	m := map[string]string{}
	for f, as := range HeaderAliases {
		for _, a := range as {
			m[normHeader(a)] = f
		}
	}
	return m
}()

// normHeader is a header as matching sees it: lower case, without blanks,
// underscores, hyphens and dots.
func normHeader(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch r {
		case ' ', '\t', '_', '-', '.':
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isField reports whether f is one of Fields.
func isField(f string) bool { return slices.Contains(Fields, f) }

// assignColumns decides the field of each column of a header: first the
// mapping (field -> header, matched case-insensitively), then columns named
// exactly as a field, then aliases. Two columns whose aliases name the same
// field, with neither mapped nor named exactly, are ambiguous. It returns the
// field per column ("" for an extra column) and the errors, whose Column is
// the header.
func assignColumns(names []string, mapping map[string]string) ([]string, []FieldError) {
	fields := make([]string, len(names))
	taken := map[string]int{} // field -> column
	var errs []FieldError

	mapped := make([]string, 0, len(mapping))
	for f := range mapping {
		mapped = append(mapped, f)
	}
	slices.SortFunc(mapped, func(a, b string) int { return slices.Index(Fields, a) - slices.Index(Fields, b) })
	for _, f := range mapped {
		want := strings.TrimSpace(mapping[f])
		col := -1
		for i, n := range names {
			if n != "" && strings.EqualFold(n, want) {
				col = i
				break
			}
		}
		if col < 0 {
			for i, n := range names {
				if n != "" && normHeader(n) == normHeader(want) {
					col = i
					break
				}
			}
		}
		switch {
		case col < 0:
			errs = append(errs, FieldError{Column: want, Message: fmt.Sprintf(
				"columns maps %s to %q, which is not a column of the file (its columns: %s)", f, clip(want), headerList(names))})
		case fields[col] != "":
			errs = append(errs, FieldError{Column: names[col], Message: fmt.Sprintf(
				"columns maps both %s and %s to %q", fields[col], f, names[col])})
		default:
			fields[col], taken[f] = f, col
		}
	}
	for i, n := range names {
		if f := strings.ToLower(n); fields[i] == "" && isField(f) {
			if _, ok := taken[f]; !ok {
				fields[i], taken[f] = f, i
			}
		}
	}
	candidates := map[string][]int{}
	for i, n := range names {
		if fields[i] != "" || n == "" {
			continue
		}
		if f, ok := aliasField[normHeader(n)]; ok {
			if _, done := taken[f]; !done {
				candidates[f] = append(candidates[f], i)
			}
		}
	}
	for _, f := range Fields {
		cols := candidates[f]
		switch {
		case len(cols) == 1:
			fields[cols[0]] = f
		case len(cols) > 1:
			quoted := make([]string, len(cols))
			for j, c := range cols {
				quoted[j] = fmt.Sprintf("%q", names[c])
			}
			all, others := "all", "the others are"
			if len(cols) == 2 {
				all, others = "both", "the other is"
			}
			errs = append(errs, FieldError{Column: names[cols[0]], Message: fmt.Sprintf(
				"columns %s %s look like the %s; say which one is with columns=%s:%s (%s kept as an extra column)",
				strings.Join(quoted, " and "), all, f, f, names[cols[0]], others)})
		}
	}
	return fields, errs
}

// headerList lists a header's names for a message, the first ten.
func headerList(names []string) string {
	var q []string
	for _, n := range names[:min(len(names), 10)] {
		q = append(q, clip(n))
	}
	s := strings.Join(q, ", ")
	if len(names) > 10 {
		s += ", ..."
	}
	return s
}

// checkMapping validates a columns option (field -> header).
func checkMapping(m map[string]string, lim Limits) []FieldError {
	var errs []FieldError
	fields := make([]string, 0, len(m))
	for f := range m {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	seen := map[string]string{}
	for _, f := range fields {
		h := strings.TrimSpace(m[f])
		switch {
		case !isField(f):
			errs = append(errs, FieldError{Column: "columns", Message: fmt.Sprintf(
				"columns: unknown field %q (fields: %s)", clip(f), strings.Join(Fields, ", "))})
		case h == "":
			errs = append(errs, FieldError{Column: "columns", Message: fmt.Sprintf("columns: the header for %s is empty", f)})
		case len(h) > maxRefBytes || shortText(h) != "":
			errs = append(errs, FieldError{Column: "columns", Message: fmt.Sprintf(
				"columns: the header for %s is not printable text of at most %d bytes", f, maxRefBytes)})
		case seen[strings.ToLower(h)] != "":
			errs = append(errs, FieldError{Column: "columns", Message: fmt.Sprintf(
				"columns: %s and %s are both mapped to %q", seen[strings.ToLower(h)], f, clip(h))})
		default:
			seen[strings.ToLower(h)] = f
		}
	}
	if len(m) > len(Fields) {
		errs = append(errs, FieldError{Column: "columns", Message: fmt.Sprintf("columns maps %d fields; there are %d", len(m), len(Fields))})
	}
	return errs[:min(len(errs), lim.MaxErrors)]
}
