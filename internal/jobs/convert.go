package jobs

import (
	"encoding/json"
	"fmt"

	"github.com/enrichq/enrichq/internal/domain"
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

// A paid answer is kept in lookup_cache.result as {"raw": <the stage's Raw>}:
// the answer as the vendor sent it, parsed again when it is reused (half the
// bytes of a typed encoding, and no encoding: that took 6 % of the worker's
// CPU in the ceiling benchmark).
type cachedRaw struct {
	Raw json.RawMessage `json:"raw"`
}

// stageRaw is the vendor's record of a stage's answer.
func stageRaw(stage domain.Stage, a answer) json.RawMessage {
	switch stage {
	case domain.StageProfile:
		return a.profile.Raw
	case domain.StageEmail:
		return a.email.Raw
	default:
		return a.phones.Raw
	}
}

// encodeCached is the lookup_cache.result of a stage's matched answer, nil
// when the answer has no raw record (not the vendor's): such an answer is
// not cached.
func encodeCached(stage domain.Stage, a answer) []byte {
	raw := stageRaw(stage, a)
	if len(raw) == 0 {
		return nil
	}
	b := make([]byte, 0, len(raw)+8) // raw is valid JSON (see enrich.Profile)
	b = append(b, `{"raw":`...)
	b = append(b, raw...)
	return append(b, '}')
}

// EncodeCachedAnswer is the lookup_cache.result a worker writes for a
// matched answer of stage (profile, email or phone): for a benchmark that
// writes what the worker writes without the worker.
func EncodeCachedAnswer(stage domain.Stage, profile *enrich.Profile, email *enrich.Email, phones *enrich.Phones) []byte {
	return encodeCached(stage, answer{profile: profile, email: email, phones: phones})
}

// decodeCached reads a cached answer of stage. An entry it cannot read is
// an error: the caller treats it as a miss and buys the answer again.
func decodeCached(stage domain.Stage, e store.CacheEntry) (answer, error) {
	if !e.Matched {
		return answer{}, nil
	}
	var c cachedRaw
	if err := json.Unmarshal(e.Result, &c); err != nil {
		return answer{}, fmt.Errorf("cached %s answer: %w", stage, err)
	}
	if len(c.Raw) == 0 || string(c.Raw) == "null" {
		return answer{}, fmt.Errorf("cached %s answer has no raw record", stage)
	}
	var a answer
	var err error
	switch stage {
	case domain.StageProfile:
		a.profile, err = enrich.ParseProfileRaw(c.Raw)
	case domain.StageEmail:
		a.email, err = enrich.ParseEmailRaw(c.Raw)
	default:
		a.phones, err = enrich.ParsePhonesRaw(c.Raw)
	}
	if err != nil {
		return answer{}, fmt.Errorf("cached %s answer: %w", stage, err)
	}
	if !a.matched(stage) {
		return answer{}, fmt.Errorf("cached %s answer is empty", stage)
	}
	return a, nil
}
