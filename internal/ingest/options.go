package ingest

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/enrichq/enrichq/internal/domain"
)

// Options are what ParseCSV, ParseXLSX and ExpandRows need of the job
// options (JobOptions.Ingest gives them).
type Options struct {
	// Roles are the role titles a company-only row expands to, one lookup
	// each (JobOptions.Roles, already validated).
	Roles []string
	// Columns maps a field (one of Fields) to the header of the column that
	// holds it, over the header matching (JobOptions.Columns).
	Columns map[string]string
	// Encoding is the text encoding of a CSV, one of the Encoding constants.
	Encoding string
	// Delimiter splits a CSV's cells; 0 sniffs it from the header line.
	Delimiter byte
	// Sheet is the sheet of an .xlsx to read; "" is the first one.
	Sheet string
	// DeferRoles accepts a company-only row without roles: it makes no
	// lookup and is counted in Summary.RowsNeedingRoles. A stored upload is
	// read so, its roles being chosen when it is estimated or submitted.
	DeferRoles bool
}

// DefaultMaxAge is max_age when the job does not give one: 30 days.
const DefaultMaxAge = 720 * time.Hour

// JobOptions are a job's options, from the JSON body or the query parameters
// of a CSV upload, validated.
type JobOptions struct {
	Name          string            // trimmed, at most 200 characters; "" when not given
	Lookups       []domain.Stage    // a subset of domain.Lookups, in their order; default [profile]
	Roles         []string          // trimmed, deduplicated (case-insensitively, first spelling kept), at most Limits.MaxRoles
	BudgetCredits *int64            // >= 0; nil: the job has no budget of its own
	MaxAge        time.Duration     // reuse results newer than this; default DefaultMaxAge
	CallbackURL   string            // called when the job ends; an absolute http(s) URL, "" for none
	Columns       map[string]string // field -> header, over the header matching; nil for none
	Encoding      string            // a CSV's text encoding, one of the Encoding constants
	Sheet         string            // the sheet of an .xlsx; "" for the first
	// Vendors is the job's own vendor order: names of the vendors file,
	// unique, at most MaxVendors; nil: the tenant's order.
	Vendors []string
}

// MaxVendors bounds a job's vendors option.
const MaxVendors = 10

// Ingest is what the parsers need of the options.
func (o JobOptions) Ingest() Options {
	return Options{Roles: o.Roles, Columns: o.Columns, Encoding: o.Encoding, Sheet: o.Sheet}
}

// optionsIn are the options as given, before validation.
type optionsIn struct {
	name, maxAge     string
	callback         string
	budget           *int64
	lookups, roles   []listItem
	vendors          []listItem
	queryBudget      string
	queryBudgetGiven bool
	columns          map[string]string
	encoding, sheet  string
}

// listItem is one element of lookups or roles with its place for messages.
type listItem struct{ v, place string }

var queryParams = []string{"name", "lookups", "roles", "vendors", "budget_credits", "max_age", "callback_url", "columns", "encoding", "sheet"}

// ParseOptions reads the options of a CSV upload from its query parameters:
// name, lookups, roles, budget_credits, max_age, callback_url, columns,
// encoding, sheet. lookups and roles may repeat and each value is a
// comma-separated list (CSV quoting lets a role contain a comma:
// roles="VP Sales, EMEA",CTO). columns may repeat too: a list of
// field:Header pairs (columns=company:Account Name,domain:Website), or a JSON
// object {"company": "Account Name"}. An empty value is the same as an absent
// parameter; an unknown or repeated single-valued parameter is an error.
// Errors are *Error with code invalid_options.
func ParseOptions(v url.Values, lim Limits) (JobOptions, error) {
	lim = lim.withDefaults()
	var in optionsIn
	var errs []FieldError
	bad := func(col, msg string) { errs = append(errs, FieldError{Column: col, Message: msg}) }
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		vals := v[key]
		switch key {
		case "columns":
			for _, val := range vals {
				if err := parseColumnsParam(val, &in.columns); err != "" {
					bad(key, err)
				}
			}
		case "name", "budget_credits", "max_age", "callback_url", "encoding", "sheet":
			if len(vals) > 1 {
				bad(key, fmt.Sprintf("%s is given %d times", key, len(vals)))
				continue
			}
			val := strings.TrimSpace(vals[0])
			switch key {
			case "name":
				in.name = vals[0]
			case "max_age":
				in.maxAge = val
			case "callback_url":
				in.callback = val
			case "budget_credits":
				in.queryBudget, in.queryBudgetGiven = val, val != ""
			case "encoding":
				in.encoding = val
			case "sheet":
				in.sheet = val
			}
		case "lookups", "roles", "vendors":
			n := 0
			for _, val := range vals {
				items, err := splitList(val)
				if err != nil {
					bad(key, fmt.Sprintf("%s: %v", key, err))
					continue
				}
				for _, it := range items {
					n++
					li := listItem{v: it, place: fmt.Sprintf("%s item %d", key, n)}
					switch key {
					case "roles":
						in.roles = append(in.roles, li)
					case "vendors":
						in.vendors = append(in.vendors, li)
					default:
						in.lookups = append(in.lookups, li)
					}
				}
			}
		default:
			col, msg := key, fmt.Sprintf("unknown parameter %q (known: %s)", key, strings.Join(queryParams, ", "))
			if !utf8.ValidString(key) || len(key) > maxShortChars {
				col, msg = "", "unknown parameter (known: "+strings.Join(queryParams, ", ")+")"
			}
			bad(col, msg)
		}
	}
	if in.queryBudgetGiven {
		n, err := strconv.ParseInt(in.queryBudget, 10, 64)
		if err != nil {
			bad("budget_credits", fmt.Sprintf("budget_credits %q is not a whole number", clip(in.queryBudget)))
		} else {
			in.budget = &n
		}
	}
	return in.validate(lim, errs)
}

// splitList splits one parameter value on commas, with CSV quoting.
func splitList(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	if strings.ContainsAny(v, "\r\n") {
		return nil, fmt.Errorf("contains a line break")
	}
	cr := csv.NewReader(strings.NewReader(v))
	cr.TrimLeadingSpace = true
	rec, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("cannot split %q on commas: %v", clip(v), err)
	}
	return rec, nil
}

// Options returns the job options of a JSON job, validated like ParseOptions
// (roles and lookups are JSON arrays here, not comma-separated).
func (r *JobRequest) Options(lim Limits) (JobOptions, error) {
	lim = lim.withDefaults()
	in := optionsIn{name: r.Name, maxAge: strings.TrimSpace(r.MaxAge), budget: r.BudgetCredits, callback: strings.TrimSpace(r.CallbackURL),
		columns: r.Columns}
	for i, v := range r.Lookups {
		in.lookups = append(in.lookups, listItem{v: v, place: fmt.Sprintf("lookups[%d]", i)})
	}
	for i, v := range r.Roles {
		in.roles = append(in.roles, listItem{v: v, place: fmt.Sprintf("roles[%d]", i)})
	}
	for i, v := range r.Vendors {
		in.vendors = append(in.vendors, listItem{v: v, place: fmt.Sprintf("vendors[%d]", i)})
	}
	return in.validate(lim, nil)
}

func (in *optionsIn) validate(lim Limits, errs []FieldError) (JobOptions, error) {
	bad := func(col, msg string) { errs = append(errs, FieldError{Column: col, Message: msg}) }
	var o JobOptions

	if msg := shortText(in.name); msg != "" {
		bad("name", "name "+msg)
	} else {
		o.Name = strings.TrimSpace(in.name)
	}

	want := map[domain.Stage]bool{}
	for _, it := range in.lookups {
		v := domain.Stage(strings.ToLower(strings.TrimSpace(it.v)))
		if !v.Lookup() {
			bad("lookups", fmt.Sprintf("%s: unknown lookup %q (use profile, email, phone or verify)", it.place, clip(it.v)))
			continue
		}
		want[v] = true
	}
	if want[domain.StageVerify] && !want[domain.StageEmail] {
		// verify checks the emails the job finds: alone it has nothing to check.
		bad("lookups", "lookups: verify checks the emails the job finds: ask email too")
	}
	for _, l := range domain.Lookups {
		if want[l] {
			o.Lookups = append(o.Lookups, l)
		}
	}
	if len(o.Lookups) == 0 {
		o.Lookups = []domain.Stage{domain.StageProfile}
	}

	seen := map[string]bool{}
	for _, it := range in.roles {
		if msg := shortText(it.v); msg != "" {
			bad("roles", it.place+" "+msg)
			continue
		}
		role := strings.TrimSpace(it.v)
		if role == "" {
			bad("roles", it.place+" is empty")
			continue
		}
		if key := strings.ToLower(role); !seen[key] {
			seen[key] = true
			o.Roles = append(o.Roles, role)
		}
	}
	if len(o.Roles) > lim.MaxRoles {
		bad("roles", fmt.Sprintf("%d roles; the limit is %d", len(o.Roles), lim.MaxRoles))
	}

	o.Vendors = in.vendorOrder(bad)

	if in.budget != nil {
		if *in.budget < 0 {
			bad("budget_credits", fmt.Sprintf("budget_credits is %d; it must be 0 or more", *in.budget))
		} else {
			b := *in.budget
			o.BudgetCredits = &b
		}
	}

	o.MaxAge = DefaultMaxAge
	if in.maxAge != "" {
		d, msg := parseMaxAge(in.maxAge)
		if msg != "" {
			bad("max_age", msg)
		}
		o.MaxAge = d
	}

	if in.callback != "" {
		if msg := checkCallbackURL(in.callback); msg != "" {
			bad("callback_url", msg)
		} else {
			o.CallbackURL = in.callback
		}
	}

	if len(in.columns) > 0 {
		if cerrs := checkMapping(in.columns, lim); len(cerrs) > 0 {
			errs = append(errs, cerrs...)
		} else {
			o.Columns = map[string]string{}
			for f, h := range in.columns {
				o.Columns[f] = strings.TrimSpace(h)
			}
		}
	}
	if enc, ok := canonicalEncoding(in.encoding); ok {
		o.Encoding = enc
	} else {
		bad("encoding", fmt.Sprintf("encoding %q is not one of %s (or auto)", clip(in.encoding), strings.Join(Encodings, ", ")))
	}
	if msg := shortText(in.sheet); msg != "" {
		bad("sheet", "sheet "+msg)
	} else {
		o.Sheet = strings.TrimSpace(in.sheet)
	}

	if len(errs) > 0 {
		errs = errs[:min(len(errs), lim.MaxErrors)]
		return JobOptions{}, &Error{Code: CodeInvalidOptions, Message: "invalid job options", Details: errs}
	}
	return o, nil
}

// shortText checks a name or role title; it returns "" or what is wrong.
func shortText(v string) string {
	if !utf8.ValidString(v) {
		return "is not valid UTF-8"
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return fmt.Sprintf("contains the control character %U", r)
		}
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(v)); n > maxShortChars {
		return fmt.Sprintf("is %d characters; the limit is %d", n, maxShortChars)
	}
	return ""
}

// parseMaxAge reads a Go duration ("720h", "90m") or whole days ("30d").
func parseMaxAge(s string) (time.Duration, string) {
	bad := fmt.Sprintf("max_age %q is not a duration like 720h or 30d", clip(s))
	d, err := time.ParseDuration(s)
	if err != nil {
		days, ok := strings.CutSuffix(s, "d")
		if !ok {
			return 0, bad
		}
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil {
			return 0, bad
		}
		if n > math.MaxInt64/int64(24*time.Hour) {
			return 0, fmt.Sprintf("max_age %q is too long", clip(s))
		}
		d = time.Duration(n) * 24 * time.Hour
	}
	if d < 0 {
		return 0, fmt.Sprintf("max_age %q is negative", clip(s))
	}
	return d, ""
}

// clip shortens a user value quoted in a message.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// checkCallbackURL checks the form of a callback URL; it returns "" or what
// is wrong. Where it points (no loopback or private networks) is checked
// when it is resolved, by the webhook sender.
func checkCallbackURL(raw string) string {
	if len(raw) > 2000 {
		return "callback_url is longer than 2000 characters"
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Hostname() == "" {
		return fmt.Sprintf("callback_url %q is not an absolute http(s) URL", clip(raw))
	}
	if u.User != nil {
		return "callback_url must not carry credentials"
	}
	if u.Fragment != "" {
		return "callback_url must not have a #fragment"
	}
	return ""
}

// parseColumnsParam adds one value of the columns query parameter to m: a
// JSON object of field to header, or field:Header pairs separated by commas
// (CSV quoting lets a header hold a comma). It returns what is wrong, or "".
func parseColumnsParam(v string, m *map[string]string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return ""
	}
	add := func(f, h string) string {
		f = strings.ToLower(strings.TrimSpace(f))
		if *m == nil {
			*m = map[string]string{}
		}
		if _, dup := (*m)[f]; dup {
			return fmt.Sprintf("columns: %s is mapped twice", clip(f))
		}
		(*m)[f] = h
		return ""
	}
	if strings.HasPrefix(v, "{") {
		var obj map[string]string
		if err := json.Unmarshal([]byte(v), &obj); err != nil {
			return `columns is not a JSON object of field to header ({"company": "Account Name"})`
		}
		keys := slices.Sorted(maps.Keys(obj))
		for _, f := range keys {
			if msg := add(f, obj[f]); msg != "" {
				return msg
			}
		}
		return ""
	}
	items, err := splitList(v)
	if err != nil {
		return fmt.Sprintf("columns: %v", err)
	}
	for _, it := range items {
		f, h, ok := strings.Cut(it, ":")
		if !ok {
			return fmt.Sprintf("columns: %q is not field:Header (like company:Account Name)", clip(it))
		}
		if msg := add(f, h); msg != "" {
			return msg
		}
	}
	return ""
}

// vendorOrder validates the vendors option: names as the vendors file
// spells them ([a-z0-9_-], 1 to 32 characters), each once, at most
// MaxVendors. Whether each is configured is the service's to check.
func (in *optionsIn) vendorOrder(bad func(col, msg string)) []string {
	var out []string
	for _, it := range in.vendors {
		name := strings.TrimSpace(it.v)
		if !vendorName.MatchString(name) {
			bad("vendors", fmt.Sprintf("%s: %q is not a vendor name (a-z, 0-9, _ and -, 1 to 32 characters)", it.place, clip(it.v)))
			continue
		}
		if slices.Contains(out, name) {
			bad("vendors", fmt.Sprintf("%s: %s is given twice", it.place, name))
			continue
		}
		out = append(out, name)
	}
	if len(out) > MaxVendors {
		bad("vendors", fmt.Sprintf("%d vendors; the limit is %d", len(out), MaxVendors))
	}
	return out
}

var vendorName = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)
