package jobs

import (
	"encoding/json"

	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

func toStoreProfile(p *enrich.Profile) *store.ProfileResult {
	return &store.ProfileResult{ProfileURL: p.ProfileURL, Name: p.Name, Headline: p.Headline, Company: p.Company, Role: p.Role,
		Location: p.Location, CompanySize: p.CompanySize, Industry: p.Industry, Technographics: p.Technographics, Raw: rawOr(p.Raw, p)}
}

func toStoreEmail(profileURL string, e *enrich.Email) *store.EmailResult {
	return &store.EmailResult{ProfileURL: profileURL, Email: e.Address, Confidence: e.Confidence, Verified: e.Verified, Status: string(e.Status), Raw: rawOr(e.Raw, e)}
}

func toStorePhone(profileURL string, p *enrich.Phones) *store.PhoneResult {
	type phone struct {
		Number  string `json:"number"`
		Type    string `json:"type,omitempty"`
		Country string `json:"country,omitempty"`
	}
	list := make([]phone, len(p.Numbers))
	for i, n := range p.Numbers {
		list[i] = phone{Number: n.Number, Type: n.Type, Country: n.Country}
	}
	b, _ := json.Marshal(list)
	r := &store.PhoneResult{ProfileURL: profileURL, Phones: b, Raw: rawOr(p.Raw, p)}
	if len(p.Numbers) > 0 {
		// The primary number: a mobile if there is one, else the first.
		primary := p.Numbers[0]
		for _, n := range p.Numbers {
			if n.Type == "mobile" {
				primary = n
				break
			}
		}
		r.PrimaryNumber, r.PrimaryType = primary.Number, primary.Type
	}
	return r
}

// rawOr is the vendor's raw JSON, or our encoding of v when there is none.
// A Raw that is set is valid JSON (see enrich.Profile): checking it again
// took 4 % of the worker's CPU.
func rawOr(raw json.RawMessage, v any) []byte {
	if len(raw) > 0 {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("{}")
	}
	return b
}
