package enrichtest

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Everything here is a pure function of the fake's seed and the lookup: the
// same lookup finds the same person, or nobody, on every run.

// Lookup is one person lookup as the PDL fake received it: the identity
// parameters, as sent.
type Lookup struct {
	Profile string // a profile URL
	Email   string
	Name    string // a full name ("first_name last_name" when sent apart)
	Company string // a company name, website or domain
}

// Segment is the lookup's country as its TLD says: of the company when it is
// a domain or a website, else of the email's domain; "" when neither says
// (a company name, a profile URL). The same key the per-segment hit rates
// of [PDLOptions] are given by: "de", "fr", "com".
func (l Lookup) Segment() string {
	for _, host := range []string{hostOf(l.Company), hostOf(emailDomain(l.Email))} {
		if i := strings.LastIndexByte(host, '.'); i > 0 && i < len(host)-1 {
			return host[i+1:]
		}
	}
	return ""
}

// key is the lookup normalised: what decides whether the fake knows it.
func (l Lookup) key() string {
	switch {
	case l.Profile != "":
		return "profile\x00" + normURL(l.Profile)
	case l.Email != "":
		return "email\x00" + normText(l.Email)
	}
	return "name\x00" + normText(l.Name) + "\x00" + normText(l.Company)
}

// hostOf is s's host name when s looks like a domain or a website
// ("acme.de", "https://www.acme.de/"), else "".
func hostOf(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || strings.ContainsAny(s, " \t") {
		return ""
	}
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || !strings.Contains(u.Hostname(), ".") {
		return ""
	}
	return strings.TrimPrefix(u.Hostname(), "www.")
}

func emailDomain(e string) string {
	if at := strings.LastIndexByte(e, '@'); at >= 0 {
		return e[at+1:]
	}
	return ""
}

var (
	pdlFirst      = []string{"jane", "john", "amara", "lukas", "mei", "carlos", "priya", "olga", "kwame", "sofia", "noah", "aiko"}
	pdlLast       = []string{"doe", "smith", "okafor", "schmidt", "chen", "garcia", "patel", "ivanova", "mensah", "rossi", "berg", "tanaka"}
	pdlCompanies  = []string{"acme corp", "globex", "initech", "umbrella labs", "hooli", "vandelay industries"}
	pdlTitles     = []string{"vp sales", "head of marketing", "cto", "software engineer", "account executive", "data analyst"}
	pdlLocations  = []string{"berlin, berlin, germany", "paris, ile-de-france, france", "london, england, united kingdom", "austin, texas, united states"}
	pdlSizes      = []string{"1-10", "11-50", "51-200", "201-500", "501-1000", "1001-5000", "10001+"}
	pdlIndustries = []string{"computer software", "financial services", "retail", "logistics and supply chain"}
)

// person is a record as the vendor sends it in "data": lower-case names,
// URLs without a scheme, any field may be null.
type person struct {
	ID                 string   `json:"id"`
	FullName           string   `json:"full_name"`
	LinkedinURL        *string  `json:"linkedin_url"`
	JobTitle           *string  `json:"job_title"`
	JobCompanyName     *string  `json:"job_company_name"`
	JobCompanyWebsite  *string  `json:"job_company_website"`
	JobCompanySize     *string  `json:"job_company_size"`
	JobCompanyIndustry *string  `json:"job_company_industry"`
	LocationName       *string  `json:"location_name"`
	WorkEmail          *string  `json:"work_email"`
	PersonalEmails     []string `json:"personal_emails"`
	MobilePhone        *string  `json:"mobile_phone"`
	PhoneNumbers       []string `json:"phone_numbers"`
	// Experience lists the jobs, the current one first (is_primary, no
	// end date), as the vendor's record does.
	Experience []experience `json:"experience"`
	// Fields enrichq does not read: they stay in the profile's Raw.
	Skills    []string `json:"skills"`
	Inferred  int      `json:"inferred_years_experience"`
	DatasetAt string   `json:"dataset_version"`

	likelihood int // 1-10, sent beside data
}

type experience struct {
	Company   experienceCompany `json:"company"`
	Title     *string           `json:"title"`
	StartDate string            `json:"start_date"`
	EndDate   *string           `json:"end_date"`
	IsPrimary bool              `json:"is_primary"`
}

type experienceCompany struct {
	Name    string  `json:"name"`
	Website *string `json:"website"`
}

// makePerson is the person the fake knows for l (whether it knows one is
// the truth's business).
func (p *PDL) makePerson(l Lookup) person {
	seed := strconv.FormatInt(p.opts.Seed, 10)
	h := hash(seed, "person", l.key())
	r := func(tag string) float64 { return unit(hash(seed, tag, l.key())) }
	name := normText(l.Name)
	if name == "" {
		name = pick(pdlFirst, h>>3) + " " + pick(pdlLast, h>>7)
	}
	slug := strings.ReplaceAll(name, " ", "-") + "-" + fmt.Sprintf("%06x", h&0xffffff)
	profile := "platform.example/in/" + slug
	if l.Profile != "" {
		profile = normURL(l.Profile)
	}
	company := pick(pdlCompanies, h>>11)
	var website *string
	if host := hostOf(l.Company); host != "" {
		website = &host
		label, _, _ := strings.Cut(host, ".")
		company = label
	} else if c := normText(l.Company); c != "" {
		company = c
	}
	if website == nil {
		w := strings.ReplaceAll(company, " ", "") + ".example"
		website = &w
	}
	per := person{
		ID:                 fmt.Sprintf("%016x", hash(seed, "id", l.key())),
		FullName:           name,
		LinkedinURL:        &profile,
		JobTitle:           ptr(pick(pdlTitles, h>>15)),
		JobCompanyName:     &company,
		JobCompanyWebsite:  website,
		JobCompanySize:     ptr(pick(pdlSizes, h>>19)),
		JobCompanyIndustry: ptr(pick(pdlIndustries, h>>23)),
		Skills:             []string{"sales", "crm"},
		Inferred:           int(1 + (h>>27)%30),
		DatasetAt:          "29.0",
		// The person of the lookup, at the company now: the vendor is sure
		// of them (6 to 10).
		likelihood: int(6 + (h>>31)%5),
	}
	per.Experience = []experience{
		{Company: experienceCompany{Name: company, Website: website}, Title: per.JobTitle, StartDate: "2021-04", IsPrimary: true},
		{Company: experienceCompany{Name: "northwind", Website: ptr("northwind.example")}, StartDate: "2016-09", EndDate: ptr("2021-03")},
	}
	if (h>>35)%6 != 0 { // one in six without a location: null
		per.LocationName = ptr(pick(pdlLocations, h>>39))
	}
	if l.Profile == "" && r("no-profile") < p.opts.NoProfileRate {
		per.LinkedinURL = nil
	}
	if r("work-email") < p.opts.WorkEmailRate {
		local := strings.ReplaceAll(name, " ", ".")
		if l.Email != "" {
			per.WorkEmail = ptr(strings.ToLower(strings.TrimSpace(l.Email)))
		} else {
			per.WorkEmail = ptr(local + "@" + *website)
		}
	}
	if r("personal-email") < p.opts.PersonalEmailRate {
		per.PersonalEmails = []string{strings.ReplaceAll(name, " ", "") + fmt.Sprint(h%100) + "@mail.example"}
	}
	if r("mobile") < p.opts.MobileRate {
		per.MobilePhone = ptr(fmt.Sprintf("+4915%08d", hash(seed, "mobile", l.key())%100_000_000))
		per.PhoneNumbers = append(per.PhoneNumbers, *per.MobilePhone)
	}
	if r("office") < p.opts.MobileRate {
		per.PhoneNumbers = append(per.PhoneNumbers, fmt.Sprintf("+4930%07d", hash(seed, "office", l.key())%10_000_000))
	}
	return per
}

// makeNamesake is the vendor's weak match for a lookup by name at a company
// it does not know: someone of that name who once worked there and works
// elsewhere now, at likelihood WrongLikelihood. The vendor's company
// parameter matches past employers too, so it answers them, and bills them.
func (p *PDL) makeNamesake(l Lookup) person {
	seed := strconv.FormatInt(p.opts.Seed, 10)
	other := Lookup{Name: l.Name, Company: pick(pdlCompanies, hash(seed, "namesake", l.key())) + " namesake"}
	per := p.makePerson(other)
	per.ID = fmt.Sprintf("%016x", hash(seed, "namesake-id", l.key()))
	per.likelihood = max(1, min(10, p.opts.WrongLikelihood))
	if unit(hash(seed, "namesake-strong", l.key())) < p.opts.WrongStrongRate {
		per.likelihood = 7
	}
	asked := normText(l.Company)
	var site *string
	if host := hostOf(l.Company); host != "" {
		asked, _, _ = strings.Cut(host, ".")
		site = &host
	}
	per.Experience = append(per.Experience[:1], experience{Company: experienceCompany{Name: asked, Website: site},
		StartDate: "2012-01", EndDate: ptr("2015-12")})
	return per
}

// has reports whether the record has field f non-null (for "required").
func (per person) has(f string) (bool, bool) {
	switch f {
	case "profiles":
		return per.LinkedinURL != nil, true
	case "experience":
		return len(per.Experience) > 0, true
	case "job_company_name":
		return per.JobCompanyName != nil, true
	case "job_company_website":
		return per.JobCompanyWebsite != nil, true
	case "location_name":
		return per.LocationName != nil, true
	case "work_email":
		return per.WorkEmail != nil, true
	case "personal_emails":
		return len(per.PersonalEmails) > 0, true
	case "emails":
		return per.WorkEmail != nil || len(per.PersonalEmails) > 0, true
	case "mobile_phone":
		return per.MobilePhone != nil, true
	case "phone_numbers":
		return len(per.PhoneNumbers) > 0, true
	case "linkedin_url":
		return per.LinkedinURL != nil, true
	case "job_title":
		return per.JobTitle != nil, true
	case "full_name":
		return per.FullName != "", true
	}
	return false, false
}
