package enrichtest

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"unicode"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
)

// Everything here is a pure function of its input: the same normalised input
// gives the same hit and the same record, whatever the seed.

func hex6(h uint64) string { return fmt.Sprintf("%06x", h&0xffffff) }

// profileHash is the hash of a profile query by kind; false for an invalid query.
func profileHash(q enrich.ProfileQuery) (uint64, bool) {
	switch q.Kind() {
	case domain.InputProfileURL:
		return hash("profile", "url", normURL(q.ProfileURL)), true
	case domain.InputEmail:
		return hash("profile", "email", normText(q.Email)), true
	case domain.InputNameCompany:
		return hash("profile", "name_company", normText(q.Name), normText(q.Company)), true
	case domain.InputNameDomain:
		return hash("profile", "name_domain", normText(q.Name), normText(q.Domain)), true
	}
	return 0, false
}

var (
	firstNames = []string{"Jane", "John", "Amara", "Lukas", "Mei", "Carlos", "Priya", "Olga", "Kwame", "Sofia", "Noah", "Aiko"}
	lastNames  = []string{"Doe", "Smith", "Okafor", "Schmidt", "Chen", "Garcia", "Patel", "Ivanova", "Mensah", "Rossi", "Berg", "Tanaka"}
	companies  = []string{"Acme Corp", "Globex", "Initech", "Umbrella Labs", "Stark Industries", "Hooli", "Vandelay Industries", "Wayne Enterprises"}
	roles      = []string{"VP Sales", "Head of Marketing", "CTO", "Software Engineer", "Account Executive", "Data Analyst", "CFO", "Product Manager"}
	locations  = []string{"Berlin, DE", "San Francisco, US", "London, GB", "Paris, FR", "Toronto, CA", "Singapore, SG", "Austin, US"}
	sizes      = []string{"1-10", "11-50", "51-200", "201-500", "501-1000", "1001-5000", "5001+"}
	industries = []string{"Software", "Financial Services", "Retail", "Manufacturing", "Healthcare", "Logistics"}
	techs      = []string{"Salesforce", "Snowflake", "HubSpot", "AWS", "Kubernetes", "Segment", "Stripe", "Zendesk"}
	phoneTypes = []string{"mobile", "direct", "office"}
)

// profileRecord is a matched profile as the vendor sends it. Some fields are
// sometimes null, and two fields the client does not know are always there.
type profileRecord struct {
	ProfileURL     string   `json:"profile_url"`
	Name           *string  `json:"name"`
	Headline       *string  `json:"headline"`
	Company        *string  `json:"company"`
	Role           *string  `json:"role"`
	Location       *string  `json:"location"`
	CompanySize    *string  `json:"company_size"`
	Industry       *string  `json:"industry"`
	Technographics []string `json:"technographics,omitempty"`
	VendorScore    float64  `json:"vendor_score"` // unknown to the client: kept in its Raw
	LastVerified   string   `json:"last_verified"`
}

// makeProfile is the record that matches q (whether q matches is ProfileHit's
// business). A name+company query returns a generated person with the name
// as role (a name+domain query likewise, its company named after the
// domain); a profile URL query a name derived from the URL's slug; an email
// query a name from the local part and a company from the domain.
func makeProfile(q enrich.ProfileQuery) profileRecord {
	h, _ := profileHash(q)
	var name, company, role, profileURL string
	switch q.Kind() {
	case domain.InputProfileURL:
		profileURL = strings.TrimSpace(q.ProfileURL)
		name = nameFromSlug(slugOf(profileURL))
		if name == "" {
			name = pick(firstNames, h>>3) + " " + pick(lastNames, h>>7)
		}
		company, role = pick(companies, h>>11), pick(roles, h>>15)
	case domain.InputEmail:
		local, domain, _ := strings.Cut(strings.TrimSpace(q.Email), "@")
		name = titleWords(strings.FieldsFunc(local, func(r rune) bool { return !unicode.IsLetter(r) }))
		if name == "" {
			name = pick(firstNames, h>>3) + " " + pick(lastNames, h>>7)
		}
		label, _, _ := strings.Cut(domain, ".")
		company = titleWords([]string{label})
		role = pick(roles, h>>15)
		profileURL = "https://platform.example/in/" + slugify(name) + "-" + hex6(h)
	case domain.InputNameCompany:
		name = pick(firstNames, h>>3) + " " + pick(lastNames, h>>7)
		company, role = strings.TrimSpace(q.Company), strings.TrimSpace(q.Name)
		profileURL = "https://platform.example/in/" + slugify(name) + "-" + hex6(h)
	case domain.InputNameDomain:
		name = pick(firstNames, h>>3) + " " + pick(lastNames, h>>7)
		label, _, _ := strings.Cut(strings.TrimSpace(q.Domain), ".")
		company, role = titleWords([]string{label}), strings.TrimSpace(q.Name)
		profileURL = "https://platform.example/in/" + slugify(name) + "-" + hex6(h)
	}
	r := profileRecord{
		ProfileURL:   profileURL,
		Name:         &name,
		Headline:     ptr(role + " at " + company),
		Company:      &company,
		Role:         &role,
		CompanySize:  ptr(pick(sizes, h>>23)),
		Industry:     ptr(pick(industries, h>>27)),
		VendorScore:  math.Round(unit(hash("score", profileURL))*100) / 100,
		LastVerified: fmt.Sprintf("2026-%02d-%02d", 1+(h>>31)%12, 1+(h>>35)%28),
	}
	if (h>>19)%8 != 0 { // one in eight has no location: null
		r.Location = ptr(pick(locations, h>>39))
	}
	for i, t := range techs {
		if (h>>(43+uint(i)))&1 == 1 {
			r.Technographics = append(r.Technographics, t)
		}
	}
	return r
}

type emailRecord struct {
	Email      string  `json:"email"`
	Confidence float64 `json:"confidence"`
	Verified   bool    `json:"verified"`
}

// makeEmail is the address found for profileURL (whether one is found is
// EmailHit's business): first.last@<company>.example.
func makeEmail(profileURL string) emailRecord {
	n := normURL(profileURL)
	h := hash("email", n)
	local := strings.ReplaceAll(strings.ToLower(nameFromSlug(slugOf(profileURL))), " ", ".")
	if local == "" {
		local = "contact"
	}
	domain := strings.ReplaceAll(slugify(pick(companies, h)), "-", "") + ".example"
	return emailRecord{
		Email:      local + "@" + domain,
		Confidence: math.Round((0.5+0.5*unit(hash("confidence", n)))*100) / 100,
		Verified:   unit(hash("verified", n)) < 0.5,
	}
}

// emailCost is what an email lookup that found e costs (nil: none found).
func (p SeedPrices) emailCost(e *emailRecord) int64 {
	switch {
	case e == nil:
		return p.EmailMiss
	case e.Verified:
		return p.EmailVerified
	}
	return p.Email
}

type phoneRecord struct {
	Number  string `json:"number"`
	Type    string `json:"type"`
	Country string `json:"country"`
}

// makePhones are the numbers found for profileURL: one to three.
func makePhones(profileURL string) []phoneRecord {
	n := normURL(profileURL)
	h := hash("phones", n)
	out := make([]phoneRecord, 1+h%3)
	for i := range out {
		hi := hash("phone", n, fmt.Sprint(i))
		out[i] = phoneRecord{Number: fmt.Sprintf("+1415555%04d", hi%10000), Type: pick(phoneTypes, hi>>16), Country: "US"}
	}
	return out
}

// phoneCost is what a phone lookup that found ph costs (empty: none found).
func (p SeedPrices) phoneCost(ph []phoneRecord) int64 {
	if len(ph) == 0 {
		return p.PhoneMiss
	}
	for _, n := range ph {
		if n.Type == "mobile" {
			return p.PhoneMobile
		}
	}
	return p.Phone
}

// slugOf is the last path segment of a profile URL ("jane-doe-1a2b3c").
func slugOf(profileURL string) string {
	u, err := url.Parse(strings.TrimSpace(profileURL))
	if err != nil {
		return ""
	}
	p := strings.Trim(u.Path, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	return p
}

// nameFromSlug is "Jane Doe" from "jane-doe-1a2b3c" (a trailing hash or
// number is dropped, and so are words that are not all letters).
func nameFromSlug(slug string) string {
	parts := strings.FieldsFunc(slug, func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	if n := len(parts); n > 1 && isHashLike(parts[n-1]) {
		parts = parts[:n-1]
	}
	var words []string
	for _, p := range parts {
		if strings.IndexFunc(p, func(r rune) bool { return !unicode.IsLetter(r) }) < 0 {
			words = append(words, p)
		}
	}
	return titleWords(words)
}

func isHashLike(s string) bool {
	hasDigit := false
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			hasDigit = true
		case r >= 'a' && r <= 'f', r >= 'A' && r <= 'F':
		default:
			return false
		}
	}
	return hasDigit || len(s) == 6 // our own suffixes are 6 hex digits
}

func titleWords(words []string) string {
	out := make([]string, 0, len(words))
	for _, w := range words {
		if w == "" {
			continue
		}
		r := []rune(strings.ToLower(w))
		r[0] = unicode.ToUpper(r[0])
		out = append(out, string(r))
	}
	return strings.Join(out, " ")
}

// slugify is "jane-doe" from "Jane Doe".
func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	return b.String()
}
