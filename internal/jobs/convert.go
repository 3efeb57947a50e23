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

// cachedAnswer is how a paid answer is kept in lookup_cache.result: the
// typed answer with its Raw inside (the record twice).
type cachedAnswer struct {
	Profile *enrich.Profile `json:"profile,omitempty"`
	Email   *enrich.Email   `json:"email,omitempty"`
	Phones  *enrich.Phones  `json:"phones,omitempty"`
}

// cachedRaw is the leaner form, {"raw": <the stage's Raw>}: the answer as
// the vendor sent it, parsed again when it is reused. Half the bytes and no
// encoding (encoding cachedAnswer took 6 % of the worker's CPU in the ceiling
// benchmark). Workers from v0.5 on read it; it is written with
// ProcessorConfig.CacheRaw (ENRICHQ_CACHE_RAW, on by default from v0.7): a
// worker before v0.5, beside this one in a rolling deploy or after a
// rollback, would read it as a miss and buy the answer again.
type cachedRaw struct {
	cachedAnswer
	Raw json.RawMessage `json:"raw,omitempty"`
}

// encodeCached is the lookup_cache.result of a stage's matched answer.
func encodeCached(stage domain.Stage, a answer) []byte {
	var c cachedAnswer
	switch stage {
	case domain.StageProfile:
		c.Profile = a.profile
	case domain.StageEmail:
		c.Email = a.email
	default:
		c.Phones = a.phones
	}
	b, _ := json.Marshal(c)
	return b
}

// encodeCachedRaw is the cachedRaw form of a stage's matched answer, or the
// cachedAnswer form when it has no raw answer (not the vendor's).
func encodeCachedRaw(stage domain.Stage, a answer) []byte {
	var raw json.RawMessage
	switch stage {
	case domain.StageProfile:
		raw = a.profile.Raw
	case domain.StageEmail:
		raw = a.email.Raw
	default:
		raw = a.phones.Raw
	}
	if len(raw) == 0 {
		return encodeCached(stage, a)
	}
	b := make([]byte, 0, len(raw)+8) // raw is valid JSON (see enrich.Profile)
	b = append(b, `{"raw":`...)
	b = append(b, raw...)
	return append(b, '}')
}

// EncodeCachedAnswer is the lookup_cache.result a worker writes for a
// matched answer of stage (profile, email or phone), in the raw form or
// the typed one (ProcessorConfig.CacheRaw): for a benchmark that writes
// what the worker writes without the worker.
func EncodeCachedAnswer(stage domain.Stage, profile *enrich.Profile, email *enrich.Email, phones *enrich.Phones, raw bool) []byte {
	a := answer{profile: profile, email: email, phones: phones}
	if raw {
		return encodeCachedRaw(stage, a)
	}
	return encodeCached(stage, a)
}

// decodeCached reads a cached answer of stage, in either form.
func decodeCached(stage domain.Stage, e store.CacheEntry) (answer, error) {
	if !e.Matched {
		return answer{}, nil
	}
	var c cachedRaw
	if err := json.Unmarshal(e.Result, &c); err != nil {
		return answer{}, fmt.Errorf("cached %s answer: %w", stage, err)
	}
	a := answer{profile: c.Profile, email: c.Email, phones: c.Phones}
	if len(c.Raw) > 0 {
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
	}
	if !a.matched(stage) {
		return answer{}, fmt.Errorf("cached %s answer is empty", stage)
	}
	return a, nil
}
