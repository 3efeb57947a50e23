package domain

import (
	"strings"
)

// Segment is a kind of row whose answers are expected to be alike at one
// vendor: the waterfall learns each vendor's hit rate per segment, so that a
// vendor strong on French domains and weak on URLs is asked first only where
// it is strong.
type Segment struct {
	// Kind is the row's input kind.
	Kind InputKind
	// Country is the company's country, ISO 3166-1 alpha-2 in lower case,
	// from its domain's country-code TLD or the row's location; "" when
	// neither says (a .com with no location).
	Country string
}

// String is the segment as stored and shown: "name_domain/fr", "email/".
func (s Segment) String() string { return string(s.Kind) + "/" + s.Country }

// ParseSegment reads a segment written by String.
func ParseSegment(v string) (Segment, bool) {
	kind, country, ok := strings.Cut(v, "/")
	if !ok || !InputKind(kind).Valid() {
		return Segment{}, false
	}
	return Segment{Kind: InputKind(kind), Country: country}, true
}

// SegmentOf is the segment of a row of kind k whose company has the
// website domain (or email domain) dom and the free-text location loc;
// either may be empty. A country-code TLD wins over the location: it names
// the company, the location may name the person.
func SegmentOf(k InputKind, dom, loc string) Segment {
	if c := countryOfDomain(dom); c != "" {
		return Segment{Kind: k, Country: c}
	}
	return Segment{Kind: k, Country: countryOfLocation(loc)}
}

// countryOfDomain is the country of a country-code TLD ("acme.co.uk" → gb);
// "" for a generic TLD (.com, .io is taken as generic: startups use it
// whatever their country).
func countryOfDomain(dom string) string {
	dom = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(dom)), ".")
	i := strings.LastIndexByte(dom, '.')
	if i < 0 {
		return ""
	}
	tld := dom[i+1:]
	if len(tld) != 2 || genericCCTLDs[tld] {
		return ""
	}
	if tld == "uk" {
		return "gb"
	}
	for _, r := range tld {
		if r < 'a' || r > 'z' {
			return ""
		}
	}
	return tld
}

// genericCCTLDs are country codes used worldwide as generic names.
var genericCCTLDs = map[string]bool{"io": true, "ai": true, "co": true, "me": true, "tv": true, "ly": true, "to": true, "fm": true, "gg": true, "sh": true}

// countryOfLocation is the country a location's last comma-separated part
// names ("Lyon, France" → fr), by name or code; "" when unknown.
func countryOfLocation(loc string) string {
	loc = strings.TrimSpace(loc)
	if loc == "" {
		return ""
	}
	if i := strings.LastIndexByte(loc, ','); i >= 0 {
		loc = loc[i+1:]
	}
	return countryNames[strings.ToLower(strings.TrimSpace(loc))]
}

// countryNames maps the names and codes a location's last part most often
// holds to ISO codes. A country not listed is "" (unknown), which is a
// segment of its own, not an error.
var countryNames = map[string]string{
	"united states": "us", "united states of america": "us", "usa": "us", "us": "us",
	"united kingdom": "gb", "uk": "gb", "england": "gb", "scotland": "gb", "wales": "gb", "gb": "gb",
	"france": "fr", "fr": "fr", "germany": "de", "deutschland": "de", "de": "de",
	"spain": "es", "españa": "es", "es": "es", "italy": "it", "italia": "it", "it": "it",
	"netherlands": "nl", "the netherlands": "nl", "nl": "nl", "belgium": "be", "be": "be",
	"switzerland": "ch", "ch": "ch", "austria": "at", "at": "at", "sweden": "se", "se": "se",
	"norway": "no", "no": "no", "denmark": "dk", "dk": "dk", "finland": "fi", "fi": "fi",
	"ireland": "ie", "ie": "ie", "portugal": "pt", "pt": "pt", "poland": "pl", "pl": "pl",
	"canada": "ca", "ca": "ca", "mexico": "mx", "mx": "mx", "brazil": "br", "brasil": "br", "br": "br",
	"india": "in", "in": "in", "japan": "jp", "jp": "jp", "china": "cn", "cn": "cn",
	"singapore": "sg", "sg": "sg", "australia": "au", "au": "au", "new zealand": "nz", "nz": "nz",
	"israel": "il", "il": "il", "south africa": "za", "za": "za",
}
