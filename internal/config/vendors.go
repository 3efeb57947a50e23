package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/upstream"
)

// VendorKind is the adapter a vendor is spoken to through.
type VendorKind string

// The vendor kinds.
const (
	// VendorSeed is the seed's vendor (internal/enrich's Client).
	VendorSeed VendorKind = "seed"
	// VendorPDL is a vendor shaped like People Data Labs v5 (internal/enrich/pdl).
	VendorPDL VendorKind = "pdl"
	// VendorHunter is an email finder and verifier shaped like Hunter v2
	// (internal/enrich/hunter).
	VendorHunter VendorKind = "hunter"
)

// vendorKinds are the kinds the vendors file takes.
var vendorKinds = []VendorKind{VendorSeed, VendorPDL, VendorHunter}

// Defaults of the vendors file.
const (
	DefaultCreditValue  = 1
	DefaultPriorHitRate = 0.5
	DefaultExplore      = 0.05
	// DefaultPDLBatchSize is the bulk size the PDL-shaped vendor advises.
	DefaultPDLBatchSize = 80
	// FallbackVendorName names the one seed vendor the ENRICHQ_VENDOR_*
	// variables make without a vendors file (results keep source "vendor").
	FallbackVendorName = "vendor"
	// MaxExplore bounds the share of rows that explore another order.
	MaxExplore = 0.5
)

// VendorSpec is one configured vendor: an entry of the vendors file
// (ENRICHQ_VENDORS_FILE), or the one the ENRICHQ_VENDOR_* variables make.
// docs/vendors.md describes every field.
type VendorSpec struct {
	// Name names the vendor in results, the ledger and idempotency keys
	// (name; [a-z0-9_-], 1 to 32 characters, unique).
	Name string
	// Kind is its adapter (kind: seed, pdl or hunter).
	Kind VendorKind
	// URL is its base URL (url; https, or http on a loopback address only;
	// without credentials, query or fragment; without the version path).
	URL string
	// KeyEnv is the variable holding its API key (key_env).
	KeyEnv string
	// Key is the API key read from KeyEnv: never printed nor logged,
	// stored only as its Account.
	Key upstream.Secret
	// Rate is its rate limit for this key, requests per second, shared by
	// every worker (rate; 0.01 to 100000; a per-minute limit of 1,000 is
	// 16.6).
	Rate float64
	// Burst is the burst the shared limiter allows (burst; 1 to 100000,
	// default 1).
	Burst int
	// CreditValue is what one of its credits is worth in budget units
	// (credit_value; a whole number from 1, default 1): budgets and the
	// ledger are integers, so the cheapest vendor gets 1 and the others
	// multiples.
	CreditValue int64
	// Bulk uses its bulk endpoint (bulk; default true).
	Bulk bool
	// MonthlyCredits caps its credits per calendar month (UTC), across
	// every job (monthly_credits; default 0: no cap).
	MonthlyCredits int64
	// HonoursKeys: whether it honours Idempotency-Key (honours_keys: auto,
	// true, false; default auto; a pdl vendor takes no key: false).
	HonoursKeys domain.HonoursKeys
	// PriorHitRate is the answer rate assumed of it until a segment has
	// answers (prior_hit_rate; more than 0, at most 1; default 0.5).
	PriorHitRate float64
	// Prices overrides its price list, per class, in its credits (prices;
	// seed: the cost table's classes, profile_by_url ... phone_miss; pdl:
	// match). Nil: the adapter's own.
	Prices map[string]int64
	// Timeout bounds one call to it (timeout; default 30s).
	Timeout time.Duration
	// MinLikelihood (pdl only; min_likelihood: one floor from 1 to 10 for
	// every input kind, or a mapping of input kind to floor): weaker matches
	// are no-matches, free. A kind not given keeps the adapter's floor.
	MinLikelihood map[domain.InputKind]int
	// Required (pdl only; required: one field expression such as work_email
	// for every stage, or a mapping of stage to expression, "" for none): a
	// match lacking it is a no-match, free. A stage not given keeps the
	// adapter's expression.
	Required map[domain.Stage]string
	// BatchSize (pdl only; batch_size, 1 to 100, default 80): the questions
	// per bulk call.
	BatchSize int
	// SearchCredits and VerifyCredits (hunter only): a search's and a
	// verification's price in the vendor's credits. The file says what one
	// search (credit_value) and one verification (verify_credit_value, 1 to
	// 1,000,000, default 1) are worth in budget units. The vendor bills two
	// quotas; the ledger has one credit per vendor, so a hunter vendor's
	// credit is the largest unit both values are whole multiples of
	// (CreditValue, their greatest common divisor), and a search costs
	// SearchCredits of them, a verification VerifyCredits (both 1 when the
	// two values are equal).
	SearchCredits, VerifyCredits int64
}

// String prints the spec without its key.
func (v VendorSpec) String() string {
	return fmt.Sprintf("config.VendorSpec{Name: %q, Kind: %s, URL: %q, KeyEnv: %s, Key: %s}", v.Name, v.Kind, v.URL, v.KeyEnv, v.Key)
}

// GoString is String, so that %#v does not print the key either.
func (v VendorSpec) GoString() string { return v.String() }

// LogValue logs the spec without its key.
func (v VendorSpec) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", v.Name), slog.String("kind", string(v.Kind)), slog.String("url", v.URL),
		slog.String("key_env", v.KeyEnv), slog.Float64("rate", v.Rate), slog.Int64("credit_value", v.CreditValue))
}

// Account is the key's id in the ledger and account_usage.
func (v VendorSpec) Account() string { return VendorAccount(string(v.Key)) }

// Allowance is MonthlyCredits as the money path takes it: nil for no cap.
func (v VendorSpec) Allowance() *int64 {
	return Vendor{MonthlyCredits: v.MonthlyCredits}.Allowance()
}

// Vendors are the configured vendors.
type Vendors struct {
	// File is ENRICHQ_VENDORS_FILE: the YAML file naming every vendor. "":
	// the ENRICHQ_VENDOR_* variables make one seed vendor named "vendor".
	File string
	// List is the vendors in the file's order (at least one).
	List []VendorSpec
	// Order is the tenants' default order of vendor names (order: auto, or
	// a list of names); nil: auto, learned per segment.
	Order []string
	// Explore is the share of rows that try another order (explore; 0 to
	// 0.5, default 0.05; 0: none).
	Explore float64
}

// Seed is the first vendor of kind seed.
func (v Vendors) Seed() (VendorSpec, bool) {
	for _, s := range v.List {
		if s.Kind == VendorSeed {
			return s, true
		}
	}
	return VendorSpec{}, false
}

// ByName is the vendor named name.
func (v Vendors) ByName(name string) (VendorSpec, bool) {
	for _, s := range v.List {
		if s.Name == name {
			return s, true
		}
	}
	return VendorSpec{}, false
}

// fallbackVendors is the one seed vendor of the ENRICHQ_VENDOR_* variables.
func fallbackVendors(v Vendor) Vendors {
	return Vendors{
		List: []VendorSpec{{Name: FallbackVendorName, Kind: VendorSeed, URL: v.URL, KeyEnv: "ENRICHQ_VENDOR_KEY", Key: upstream.Secret(v.Key),
			Rate: v.RPS, Burst: v.Burst, CreditValue: DefaultCreditValue, Bulk: v.Bulk, MonthlyCredits: v.MonthlyCredits,
			HonoursKeys: v.HonoursKeys, PriorHitRate: DefaultPriorHitRate, Timeout: v.Timeout}},
		Explore: DefaultExplore,
	}
}

// legacyVendorVars are the variables a vendors file replaces.
var legacyVendorVars = []string{"ENRICHQ_VENDOR_URL", "ENRICHQ_VENDOR_KEY", "ENRICHQ_VENDOR_RPS", "ENRICHQ_VENDOR_BURST",
	"ENRICHQ_VENDOR_BULK", "ENRICHQ_VENDOR_HONOURS_KEYS", "ENRICHQ_VENDOR_TIMEOUT", "ENRICHQ_VENDOR_MONTHLY_CREDITS"}

// readVendors reads ENRICHQ_VENDORS_FILE, or makes the fallback vendor of
// legacy (the ENRICHQ_VENDOR_* variables, already read). With the file, a
// legacy variable set as well is an error (the file names every vendor),
// and needKeys says each key_env must hold a key (the worker's case).
func readVendors(r *reader, legacy Vendor, needKeys bool) Vendors {
	file := strings.TrimSpace(r.getenv("ENRICHQ_VENDORS_FILE"))
	if file == "" {
		return fallbackVendors(legacy)
	}
	for _, name := range legacyVendorVars {
		if r.getenv(name) != "" {
			r.errs = append(r.errs, fmt.Errorf("%s is set as well as ENRICHQ_VENDORS_FILE: the file names every vendor; unset %s", name, name))
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("ENRICHQ_VENDORS_FILE: %w", err))
		return Vendors{File: file}
	}
	v, errs := ParseVendors(file, b, r.getenv, needKeys)
	r.errs = append(r.errs, errs...)
	return v
}

// ParseVendors parses a vendors file (name is the file's name in errors),
// reads each vendor's key from getenv(key_env), fills the defaults and
// validates every entry. It returns every problem at once, each naming the
// file, the entry (index and name) and the field; never a key.
func ParseVendors(name string, b []byte, getenv func(string) string, needKeys bool) (Vendors, []error) {
	p := &vendorsParser{file: name, getenv: getenv, needKeys: needKeys}
	v := p.parse(b)
	return v, p.errs
}

type vendorsParser struct {
	file     string
	getenv   func(string) string
	needKeys bool
	errs     []error
}

func (p *vendorsParser) fail(format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("vendors file %s: "+format, append([]any{p.file}, args...)...))
}

// fileDoc is the top of the file. Decoded with KnownFields, a misspelt
// top-level key is an error; each entry's keys are checked by vendorFields,
// so that the error names the entry.
type fileDoc struct {
	Vendors yaml.Node `yaml:"vendors"`
	Order   yaml.Node `yaml:"order"`
	Explore yaml.Node `yaml:"explore"`
}

func (p *vendorsParser) parse(b []byte) Vendors {
	v := Vendors{File: p.file, Explore: DefaultExplore}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var doc fileDoc
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		p.fail("empty: want a top-level vendors: list")
		return v
	case err != nil:
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			p.fail("%s", strings.TrimPrefix(err.Error(), "yaml: "))
			return v
		}
		for _, m := range te.Errors { // a misspelt top-level field
			p.fail("%s", strings.ReplaceAll(m, "in type config.fileDoc", "at the top (the fields are vendors, order, explore)"))
		}
		return v
	}
	if doc.Vendors.Kind != yaml.SequenceNode || len(doc.Vendors.Content) == 0 {
		p.fail("vendors: want a list of at least one vendor")
	} else {
		for i, n := range doc.Vendors.Content {
			v.List = append(v.List, p.entry(i, n, v.List)) // kept even when wrong: later entries and the order refer to it
		}
	}
	if doc.Explore.Kind != 0 {
		f, err := strconv.ParseFloat(doc.Explore.Value, 64)
		if doc.Explore.Kind != yaml.ScalarNode || err != nil || f < 0 || f > MaxExplore {
			p.fail("explore (line %d): %q: want a share from 0 to %v", doc.Explore.Line, doc.Explore.Value, MaxExplore)
		} else {
			v.Explore = f
		}
	}
	v.Order = p.order(doc.Order, v.List)
	return v
}

// order reads "order: auto" (nil) or a list of vendor names.
func (p *vendorsParser) order(n yaml.Node, list []VendorSpec) []string {
	switch {
	case n.Kind == 0, n.Kind == yaml.ScalarNode && n.Value == "auto":
		return nil
	case n.Kind != yaml.SequenceNode || len(n.Content) == 0:
		p.fail("order (line %d): want auto or a list of vendor names", n.Line)
		return nil
	}
	var out []string
	for _, c := range n.Content {
		switch {
		case c.Kind != yaml.ScalarNode:
			p.fail("order (line %d): want vendor names", c.Line)
		case slices.Contains(out, c.Value):
			p.fail("order (line %d): %q named twice", c.Line, c.Value)
		case !slices.ContainsFunc(list, func(s VendorSpec) bool { return s.Name == c.Value }):
			p.fail("order (line %d): no vendor is named %q", c.Line, c.Value)
		default:
			out = append(out, c.Value)
		}
	}
	return out
}

// vendorFields are the keys of an entry, in the order docs/vendors.md lists them.
var vendorFields = []string{"name", "kind", "url", "key_env", "rate", "burst", "credit_value", "bulk", "monthly_credits",
	"honours_keys", "prior_hit_rate", "prices", "timeout", "min_likelihood", "required", "batch_size", "verify_credit_value"}

// priceClasses are the classes of the prices field, per kind.
var priceClasses = map[VendorKind][]string{
	VendorSeed: {"profile_by_url", "profile_by_search", "email_hit", "email_verified", "email_miss", "phone_hit", "phone_mobile", "phone_miss"},
	VendorPDL:  {"match"},
}

var (
	vendorNameRE = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)
	envNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// entry reads vendors[i], reporting every problem of it.
func (p *vendorsParser) entry(i int, n *yaml.Node, before []VendorSpec) VendorSpec {
	s := VendorSpec{CreditValue: DefaultCreditValue, Burst: DefaultVendorBurst, Bulk: true, PriorHitRate: DefaultPriorHitRate,
		Timeout: DefaultVendorTimeout}
	if n.Kind != yaml.MappingNode {
		p.fail("vendors[%d] (line %d): want a mapping of fields (name, kind, url, key_env, rate, ...)", i, n.Line)
		return s
	}
	r := newEntryReader(p, i, n)
	s.Name = r.name()
	r.unknownFields()
	r.identity(&s, before)
	r.pace(&s)
	r.money(&s)
	r.prices(&s)
	r.timeout(&s)
	r.kindSpecific(&s)
	r.fitsInUnits(&s)
	return s
}

// entryReader reads the fields of one entry; every error it reports names
// the entry by label, the field and the field's line (the entry's when the
// field is absent).
type entryReader struct {
	p      *vendorsParser
	n      *yaml.Node
	fields map[string]*yaml.Node
	label  string
}

func newEntryReader(p *vendorsParser, i int, n *yaml.Node) *entryReader {
	r := &entryReader{p: p, n: n, fields: map[string]*yaml.Node{}}
	for k := 0; k+1 < len(n.Content); k += 2 {
		r.fields[n.Content[k].Value] = n.Content[k+1]
	}
	r.label = fmt.Sprintf("vendors[%d]", i)
	if name := r.name(); name != "" {
		r.label += fmt.Sprintf(" (%s)", name)
	}
	return r
}

// name is the entry's name as written, or "".
func (r *entryReader) name() string {
	if f := r.fields["name"]; f != nil {
		return f.Value
	}
	return ""
}

func (r *entryReader) bad(field string, f *yaml.Node, format string, args ...any) {
	line := r.n.Line
	if f != nil {
		line = f.Line
	}
	r.p.fail("%s: %s (line %d): "+format, append([]any{r.label, field, line}, args...)...)
}

func (r *entryReader) unknownFields() {
	for k := 0; k+1 < len(r.n.Content); k += 2 {
		if key := r.n.Content[k]; !slices.Contains(vendorFields, key.Value) {
			r.p.fail("%s: unknown field %q (line %d); the fields are %s", r.label, key.Value, key.Line, strings.Join(vendorFields, ", "))
		}
	}
}

// scalar is the field's node when it holds a value; a field present without
// one is reported.
func (r *entryReader) scalar(field string) (*yaml.Node, bool) {
	f := r.fields[field]
	if f == nil {
		return nil, false
	}
	if f.Kind != yaml.ScalarNode || f.Tag == "!!null" {
		r.bad(field, f, "want a value")
		return nil, false
	}
	return f, true
}

// whole sets *dst to the field's whole number from lo to hi, when present and valid.
func (r *entryReader) whole(field string, dst *int64, lo, hi int64, why string) {
	if f, ok := r.scalar(field); ok {
		v, err := strconv.ParseInt(f.Value, 10, 64)
		if err != nil || v < lo || v > hi {
			r.bad(field, f, "%q: want a whole number from %d to %d%s", f.Value, lo, hi, why)
			return
		}
		*dst = v
	}
}

// number sets *dst to the field's number when present and ok.
func (r *entryReader) number(field string, dst *float64, ok func(float64) bool, want string) {
	if f, present := r.scalar(field); present {
		v, err := strconv.ParseFloat(f.Value, 64)
		if err != nil || math.IsNaN(v) || !ok(v) {
			r.bad(field, f, "%q: want %s", f.Value, want)
			return
		}
		*dst = v
	}
}

// identity checks name, kind and url, and reads key_env and its key.
func (r *entryReader) identity(s *VendorSpec, before []VendorSpec) {
	switch f := r.fields["name"]; {
	case f == nil || s.Name == "":
		r.bad("name", f, "required")
	case !vendorNameRE.MatchString(s.Name):
		r.bad("name", f, "%q: want 1 to 32 of a-z, 0-9, _ and -", s.Name)
	default:
		for j, o := range before {
			if o.Name == s.Name {
				r.bad("name", f, "%q is the name of vendors[%d] too: names are unique", s.Name, j)
			}
		}
	}
	if f, ok := r.scalar("kind"); ok {
		s.Kind = VendorKind(f.Value)
		if !slices.Contains(vendorKinds, s.Kind) {
			r.bad("kind", f, "%q: want seed, pdl or hunter", f.Value)
		}
	} else if r.fields["kind"] == nil {
		r.bad("kind", nil, "required: seed, pdl or hunter")
	}
	if f, ok := r.scalar("url"); ok {
		s.URL = strings.TrimRight(strings.TrimSpace(f.Value), "/")
		if msg := checkVendorURL(s.URL, false); msg != "" {
			r.bad("url", f, "%s", msg)
		}
	} else if r.fields["url"] == nil {
		r.bad("url", nil, "required: the vendor's base URL")
	}
	r.key(s)
}

// key reads key_env, and the key it names.
func (r *entryReader) key(s *VendorSpec) {
	f, ok := r.scalar("key_env")
	if !ok {
		if r.fields["key_env"] == nil {
			r.bad("key_env", nil, "required: the variable holding the vendor's API key (no secret in the file)")
		}
		return
	}
	s.KeyEnv = f.Value
	if !envNameRE.MatchString(s.KeyEnv) {
		r.bad("key_env", f, "%q is not a variable name", s.KeyEnv)
		return
	}
	s.Key = upstream.Secret(strings.TrimSpace(r.p.getenv(s.KeyEnv)))
	if s.Key == "" && r.p.needKeys {
		r.bad("key_env", f, "%s is not set: it holds the vendor's API key", s.KeyEnv)
	}
}

// pace reads rate and burst.
func (r *entryReader) pace(s *VendorSpec) {
	if r.fields["rate"] == nil {
		r.bad("rate", nil, "required: requests per second (a per-minute limit of 1,000 is 16.6)")
	}
	r.number("rate", &s.Rate, func(v float64) bool { return v >= 0.01 && v <= 100000 }, "requests per second, from 0.01 to 100000")
	var burst int64 = DefaultVendorBurst
	r.whole("burst", &burst, 1, 100000, "")
	s.Burst = int(burst)
}

// money reads credit_value, bulk, monthly_credits, honours_keys and
// prior_hit_rate.
func (r *entryReader) money(s *VendorSpec) {
	r.whole("credit_value", &s.CreditValue, 1, 1_000_000, ": budgets and the ledger are integers, so give the cheapest vendor 1 and the others as multiples")
	if f, ok := r.scalar("bulk"); ok {
		b, err := strconv.ParseBool(f.Value)
		if err != nil {
			r.bad("bulk", f, "%q: want true or false", f.Value)
		}
		s.Bulk = b
	}
	r.whole("monthly_credits", &s.MonthlyCredits, 0, 1<<50, "")
	s.HonoursKeys = domain.HonoursKeysAuto
	keyless := s.Kind == VendorPDL || s.Kind == VendorHunter
	if keyless {
		s.HonoursKeys = domain.HonoursKeysFalse
	}
	if f, ok := r.scalar("honours_keys"); ok {
		h := domain.HonoursKeys(strings.ToLower(f.Value))
		switch {
		case !h.Valid():
			r.bad("honours_keys", f, "%q: want auto, true or false", f.Value)
		case keyless && h != domain.HonoursKeysFalse:
			r.bad("honours_keys", f, "%q: a %s vendor takes no idempotency keys: leave it out, or say false", f.Value, s.Kind)
		default:
			s.HonoursKeys = h
		}
	}
	r.number("prior_hit_rate", &s.PriorHitRate, func(v float64) bool { return v > 0 && v <= 1 }, "a share above 0, at most 1")
}

// prices reads the credits per class, the classes checked against the kind's.
func (r *entryReader) prices(s *VendorSpec) {
	f := r.fields["prices"]
	if f == nil || f.Tag == "!!null" {
		return
	}
	if f.Kind != yaml.MappingNode {
		r.bad("prices", f, "want a mapping of class: credits")
		return
	}
	if s.Kind == VendorHunter {
		r.bad("prices", f, "a hunter vendor has no price classes: a search is worth credit_value, a verification verify_credit_value")
		return
	}
	s.Prices = map[string]int64{}
	classes := priceClasses[s.Kind]
	for k := 0; k+1 < len(f.Content); k += 2 {
		cls, val := f.Content[k], f.Content[k+1]
		c, err := strconv.ParseInt(val.Value, 10, 64)
		switch {
		case classes != nil && !slices.Contains(classes, cls.Value):
			r.bad("prices", cls, "unknown class %q for kind %s; the classes are %s", cls.Value, s.Kind, strings.Join(classes, ", "))
		case val.Kind != yaml.ScalarNode || err != nil || c < 0 || c > 1_000_000:
			r.bad("prices", val, "%s: %q: want a whole number of credits from 0", cls.Value, val.Value)
		default:
			s.Prices[cls.Value] = c
		}
	}
}

func (r *entryReader) timeout(s *VendorSpec) {
	if f, ok := r.scalar("timeout"); ok {
		d, err := time.ParseDuration(f.Value)
		if err != nil || d <= 0 {
			r.bad("timeout", f, "%q: want a positive duration such as 30s", f.Value)
		}
		s.Timeout = d
	}
}

// legacy is the seed spec as the worker's Vendor of today.
func (v VendorSpec) legacy() Vendor {
	return Vendor{URL: v.URL, Key: string(v.Key), RPS: v.Rate, Burst: v.Burst, Bulk: v.Bulk, HonoursKeys: v.HonoursKeys,
		Timeout: v.Timeout, MonthlyCredits: v.MonthlyCredits}
}
