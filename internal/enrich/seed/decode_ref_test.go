package seed

// The bulk decoder as it was before it decoded each result in one pass
// (kept here as the reference of TestDecodeBulkMatchesReference and the
// baseline of BenchmarkDecodeBulk).

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/enrichq/enrichq/internal/enrich"
)

func ref_decodeBulk(body []byte, n int) ([]enrich.BulkItem, error) {
	var w struct {
		Results *[]json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, malformed("bulk: %v", err)
	}
	if w.Results == nil {
		return nil, malformed("bulk: no results")
	}
	items := make([]enrich.BulkItem, n)
	seen := make([]int, n)
	for _, raw := range *w.Results {
		var f map[string]json.RawMessage
		if err := json.Unmarshal(raw, &f); err != nil || f == nil {
			continue // cannot tell which row it answers: that row ends up missing
		}
		var idx int
		if err := json.Unmarshal(f["index"], &idx); err != nil || idx < 0 || idx >= n {
			continue
		}
		seen[idx]++
		if seen[idx] > 1 {
			continue
		}
		items[idx] = ref_bulkItem(f)
	}
	for i := range items {
		switch {
		case seen[i] == 0:
			items[i] = enrich.BulkItem{Err: rowTransient("missing_result", "the vendor's answer has no result for this row")}
		case seen[i] > 1:
			items[i] = enrich.BulkItem{Err: rowTransient("duplicate_result", "the vendor's answer has several results for this row")}
		}
	}
	return items, nil
}

func ref_bulkItem(f map[string]json.RawMessage) enrich.BulkItem {
	if raw, ok := f["error"]; ok && !isNull(raw) {
		var e struct {
			Code    any `json:"code"`
			Message any `json:"message"`
		}
		_ = json.Unmarshal(raw, &e)
		code := enrich.Clip(looseText(e.Code), 100)
		if code == "" {
			code = "row_error"
		}
		return enrich.BulkItem{Err: &enrich.Error{
			Class:    rowErrorClass(code),
			Endpoint: endpointBulk,
			Code:     code,
			Message:  enrich.Clip(looseText(e.Message), 300),
		}}
	}
	var it enrich.BulkItem
	var err error
	if raw := f["profile"]; len(raw) > 0 { // absent: no match
		if it.Profile, err = ref_parseProfileRecord(raw); err != nil {
			return enrich.BulkItem{Err: rowTransient("malformed_result", err.Error())}
		}
	}
	if it.Email, err = ref_parseEmailObject(bytes.TrimSpace(f["email"])); err != nil {
		return enrich.BulkItem{Err: rowTransient("malformed_result", err.Error())}
	}
	nums, err := ref_parsePhoneList(f["phones"])
	if err != nil {
		return enrich.BulkItem{Err: rowTransient("malformed_result", err.Error())}
	}
	if len(nums) > 0 {
		raw, _ := json.Marshal(map[string]json.RawMessage{"phones": f["phones"]})
		it.Phones = &enrich.Phones{Numbers: nums, Raw: raw}
	}
	return it
}

func ref_parseProfileRecord(raw []byte) (*enrich.Profile, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, malformed("empty body")
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, malformed("profile: %v", err)
	}
	if f == nil { // null
		return nil, nil
	}
	u, ok := f["profile_url"]
	if !ok || isNull(u) {
		return nil, nil
	}
	var profileURL string
	if err := json.Unmarshal(u, &profileURL); err != nil {
		return nil, malformed("profile: profile_url is not a string")
	}
	if strings.TrimSpace(profileURL) == "" {
		return nil, nil
	}
	return &enrich.Profile{
		ProfileURL:     profileURL,
		Name:           ref_looseString(f["name"]),
		Headline:       ref_looseString(f["headline"]),
		Company:        ref_looseString(f["company"]),
		Role:           ref_looseString(f["role"]),
		Location:       ref_looseString(f["location"]),
		CompanySize:    ref_looseString(f["company_size"]),
		Industry:       ref_looseString(f["industry"]),
		Technographics: ref_looseStrings(f["technographics"]),
		Raw:            bytes.Clone(raw),
	}, nil
}

func ref_parseEmailObject(raw []byte) (*enrich.Email, error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, malformed("email: %v", err)
	}
	addr := ref_looseString(f["email"])
	if strings.TrimSpace(addr) == "" {
		return nil, nil
	}
	var e = &enrich.Email{Address: addr, Raw: bytes.Clone(raw)}
	_ = json.Unmarshal(f["confidence"], &e.Confidence) // absent or not a number: 0
	_ = json.Unmarshal(f["verified"], &e.Verified)     // absent or not a bool: false
	return e, nil
}

func ref_parsePhoneList(raw json.RawMessage) ([]enrich.Phone, error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, malformed("phones: %v", err)
	}
	var out []enrich.Phone
	for _, p := range list {
		n := enrich.Phone{Number: ref_looseString(p["number"]), Type: ref_looseString(p["type"]), Country: ref_looseString(p["country"])}
		if strings.TrimSpace(n.Number) != "" {
			out = append(out, n)
		}
	}
	return out, nil
}

func ref_looseString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func ref_looseStrings(raw json.RawMessage) []string {
	var list []any
	if len(raw) == 0 || json.Unmarshal(raw, &list) != nil {
		return nil
	}
	var out []string
	for _, v := range list {
		if s, ok := v.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}
