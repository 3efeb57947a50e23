package jobs

import (
	"encoding/json"
	"fmt"

	"github.com/enrichq/enrichq/internal/enrich"
	"github.com/enrichq/enrichq/internal/store"
)

func toStoreProfile(p *enrich.Profile) *store.ProfileResult {
	return &store.ProfileResult{ProfileURL: p.ProfileURL, Name: p.Name, Headline: p.Headline, Company: p.Company, Role: p.Role,
		Location: p.Location, CompanySize: p.CompanySize, Industry: p.Industry, Technographics: p.Technographics, Raw: rawOr(p.Raw, p)}
}

func toStoreEmail(profileURL string, e *enrich.Email) *store.EmailResult {
	return &store.EmailResult{ProfileURL: profileURL, Email: e.Address, Confidence: e.Confidence, Verified: e.Verified, Raw: rawOr(e.Raw, e)}
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
func rawOr(raw json.RawMessage, v any) []byte {
	if len(raw) > 0 && json.Valid(raw) {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("{}")
	}
	return b
}

// cachedAnswer is how a paid answer is kept in lookup_cache.result.
type cachedAnswer struct {
	Profile *enrich.Profile `json:"profile,omitempty"`
	Email   *enrich.Email   `json:"email,omitempty"`
	Phones  *enrich.Phones  `json:"phones,omitempty"`
}

func encodeCached(stage string, a answer) []byte {
	var c cachedAnswer
	switch stage {
	case "profile":
		c.Profile = a.profile
	case "email":
		c.Email = a.email
	default:
		c.Phones = a.phones
	}
	b, _ := json.Marshal(c)
	return b
}

func decodeCached(stage string, e store.CacheEntry) (answer, error) {
	if !e.Matched {
		return answer{}, nil
	}
	var c cachedAnswer
	if err := json.Unmarshal(e.Result, &c); err != nil {
		return answer{}, fmt.Errorf("cached %s answer: %w", stage, err)
	}
	a := answer{profile: c.Profile, email: c.Email, phones: c.Phones}
	if !a.matched(stage) {
		return answer{}, fmt.Errorf("cached %s answer is empty", stage)
	}
	return a, nil
}
