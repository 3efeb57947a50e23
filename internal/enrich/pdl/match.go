package pdl

// The right person or none. The vendor answers its best candidate down to
// likelihood 2 (by its own words a 10-30 % chance of the right person), and
// its company parameter matches any past employer: left alone it bills, and
// enrichq would deliver, someone who once worked at the company asked, or
// someone else of the same name. Two guards, in the order they save money:
//
//  1. At the vendor, so a weak match is a free 404: a min_likelihood floor
//     per input kind (DefaultMinLikelihood) and a required expression per
//     stage (DefaultRequired).
//  2. After the answer, for a lookup by name at a company: a record whose
//     current employer is not the company or domain asked (CurrentCompany,
//     enrich's rule of the right person) is not the person asked for. It
//     was billed, and is counted so, but nothing of it is delivered.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
)

// DefaultMinLikelihood is the floor sent as min_likelihood per input kind.
// A profile URL or an email names one person: the vendor's weak scores on
// them are matches on something else, and 4 refuses those without losing
// the person. A name at a company names many people over the years: the
// vendor scores a former employee or a namesake 2 to 5, the person now
// working there 6 and up, so 6 (the floor PDL's own client tests use).
var DefaultMinLikelihood = map[domain.InputKind]int{
	domain.InputProfileURL:  4,
	domain.InputEmail:       4,
	domain.InputNameCompany: 6,
	domain.InputNameDomain:  6,
}

// DefaultRequired is the required expression sent per stage asked: a match
// without what the stage wants is a free 404 instead of a billed match
// that answers nothing. A question asking several stages sends them joined
// by OR (one match fills every stage it has).
var DefaultRequired = map[domain.Stage]string{
	domain.StageProfile: "linkedin_url",
	domain.StageEmail:   "work_email OR personal_emails",
	domain.StagePhone:   "mobile_phone OR phone_numbers",
}

// minLikelihoods is DefaultMinLikelihood with cfg's floors over it,
// validated: 1 to 10, or 0 for the vendor's own default (2).
func minLikelihoods(cfg map[domain.InputKind]int) (map[domain.InputKind]int, error) {
	out := map[domain.InputKind]int{}
	for k, n := range DefaultMinLikelihood {
		out[k] = n
	}
	for k, n := range cfg {
		if _, ok := DefaultMinLikelihood[k]; !ok {
			return nil, fmt.Errorf("pdl: min_likelihood for %q: not an input kind this vendor takes", k)
		}
		if n < 0 || n > 10 {
			return nil, fmt.Errorf("pdl: min_likelihood %d for %s: want 1 to 10, or 0 for the vendor's default", n, k)
		}
		out[k] = n
	}
	return out, nil
}

// requireds is DefaultRequired with cfg's expressions over it ("" for a
// stage: nothing required).
func requireds(cfg map[domain.Stage]string) (map[domain.Stage]string, error) {
	out := map[domain.Stage]string{}
	for s, e := range DefaultRequired {
		out[s] = e
	}
	for s, e := range cfg {
		if _, ok := DefaultRequired[s]; !ok {
			return nil, fmt.Errorf("pdl: required for %q: not a stage this vendor answers", s)
		}
		e = strings.TrimSpace(e)
		if strings.ContainsFunc(e, unicode.IsControl) || len(e) > 500 {
			return nil, fmt.Errorf("pdl: required for %s: want a field expression such as work_email, at most 500 characters", s)
		}
		out[s] = e
	}
	return out, nil
}

// requiredFor is the required expression of a question asking stages: each
// stage's joined by OR; "" when a stage asked requires nothing (any match
// answers it).
func requiredFor(req map[domain.Stage]string, stages []domain.Stage) string {
	var parts []string
	for _, s := range domain.Stages {
		if !slices.Contains(stages, s) {
			continue
		}
		e := req[s]
		if e == "" {
			return ""
		}
		if !slices.Contains(parts, e) {
			parts = append(parts, e)
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	for i, p := range parts {
		parts[i] = "(" + p + ")"
	}
	return strings.Join(parts, " OR ")
}

// employerWire is what a record says of where the person works now.
type employerWire struct {
	JobCompanyName    enrich.LooseString `json:"job_company_name"`
	JobCompanyWebsite enrich.LooseString `json:"job_company_website"`
	Experience        []struct {
		Company *struct {
			Name    enrich.LooseString `json:"name"`
			Website enrich.LooseString `json:"website"`
		} `json:"company"`
		EndDate   json.RawMessage `json:"end_date"`
		IsPrimary bool            `json:"is_primary"`
	} `json:"experience"`
}

// CurrentCompany reports whether the record data (a person's JSON object)
// works now at the company q asks for, by enrich's rule ([enrich.WorksAt])
// on its job_company_website, job_company_name and current experience
// (primary, or without an end date).
func CurrentCompany(q enrich.ProfileQuery, data []byte) bool {
	var w employerWire
	if json.Unmarshal(data, &w) != nil {
		return false
	}
	e := enrich.Employer{Websites: []string{string(w.JobCompanyWebsite)}, Names: []string{string(w.JobCompanyName)}}
	for _, x := range w.Experience {
		end := strings.TrimSpace(string(x.EndDate))
		if x.Company != nil && (x.IsPrimary || end == "" || end == "null") {
			e.Websites, e.Names = append(e.Websites, string(x.Company.Website)), append(e.Names, string(x.Company.Name))
		}
	}
	return enrich.WorksAt(q, e)
}
