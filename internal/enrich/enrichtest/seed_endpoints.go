package enrichtest

// The seed fake's endpoints: what it checks of an input, and how
// /v1/profile, /v1/email, /v1/phone and /v1/bulk answer. The middleware
// every call goes through (auth, limits, faults, idempotency, charges) is
// seed_api.go's.

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
)

// checkInputs validates a profile lookup's inputs (query parameters or a
// bulk row).
func (v *Seed) checkInputs(in map[string]string) (enrich.ProfileQuery, *apiError) {
	q := enrich.ProfileQuery{
		ProfileURL: strings.TrimSpace(in["profile_url"]),
		Email:      strings.TrimSpace(in["email"]),
		Name:       strings.TrimSpace(in["name"]),
		Company:    strings.TrimSpace(in["company"]),
		Domain:     strings.TrimSpace(in["domain"]),
	}
	if q.Name != "" && q.Company != "" && q.Domain != "" {
		return q, &apiError{http.StatusBadRequest, "invalid_request", "give company or domain, not both"}
	}
	if (q.Name == "") != (q.Company == "" && q.Domain == "") && q.ProfileURL == "" && q.Email == "" {
		return q, &apiError{http.StatusBadRequest, "invalid_request", "name goes with company or domain"}
	}
	if q.Kind() == "" {
		return q, &apiError{http.StatusBadRequest, "invalid_request", "give exactly one of profile_url, email, name with company, or name with domain"}
	}
	if v.rejected(q.ProfileURL, q.Email, q.Name, q.Company, q.Domain) {
		return q, &apiError{http.StatusBadRequest, "invalid_request", "input rejected"}
	}
	if q.ProfileURL != "" && !validProfileURL(q.ProfileURL) {
		return q, &apiError{http.StatusUnprocessableEntity, "invalid_profile_url", "profile_url is not a profile URL"}
	}
	if local, domain, ok := strings.Cut(q.Email, "@"); q.Email != "" && (!ok || local == "" || !strings.Contains(domain, ".")) {
		return q, &apiError{http.StatusUnprocessableEntity, "invalid_email", "email is not an email address"}
	}
	if q.Domain != "" && !bareDomain(q.Domain) {
		return q, &apiError{http.StatusUnprocessableEntity, "invalid_domain", "domain is not a bare host name such as acme.com"}
	}
	return q, nil
}

// bareDomain is the contract's domain: lower-case ASCII letters, digits,
// hyphens and dots, with a dot, no "www.", no scheme, port or path.
func bareDomain(d string) bool {
	if !strings.Contains(d, ".") || strings.HasPrefix(d, "www.") || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") {
		return false
	}
	for _, r := range d {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '.' {
			return false
		}
	}
	return true
}

func (v *Seed) rejected(inputs ...string) bool {
	if v.opts.RejectSubstring == "" {
		return false
	}
	for _, s := range inputs {
		if strings.Contains(s, v.opts.RejectSubstring) {
			return true
		}
	}
	return false
}

func validProfileURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && strings.Trim(u.Path, "/") != ""
}

// checkProfileURL validates the input of /v1/email and /v1/phone.
func (v *Seed) checkProfileURL(s string) *apiError {
	switch {
	case s == "":
		return &apiError{http.StatusBadRequest, "invalid_request", "profile_url is required"}
	case v.rejected(s):
		return &apiError{http.StatusBadRequest, "invalid_request", "input rejected"}
	case !validProfileURL(s):
		return &apiError{http.StatusUnprocessableEntity, "invalid_profile_url", "profile_url is not a profile URL"}
	}
	return nil
}

func inputOf(q enrich.ProfileQuery) string {
	switch q.Kind() {
	case domain.InputProfileURL:
		return "profile_url=" + q.ProfileURL
	case domain.InputEmail:
		return "email=" + q.Email
	case domain.InputNameDomain:
		return "name=" + q.Name + "&domain=" + q.Domain
	}
	return "name=" + q.Name + "&company=" + q.Company
}

// profileCost is what a profile lookup of q costs (found: a match).
func (p SeedPrices) profileCost(q enrich.ProfileQuery, found bool) int64 {
	switch byURL := q.Kind() == domain.InputProfileURL; {
	case byURL && found:
		return p.ProfileByURL
	case byURL:
		return p.ProfileByURLNoMatch
	case found:
		return p.ProfileBySearch
	}
	return p.ProfileBySearchNoMatch
}

// GET /v1/profile?profile_url= | ?email= | ?name=&company= | ?name=&domain=
func (v *Seed) profile(r *http.Request, _ []byte) answer {
	p := r.URL.Query()
	q, aerr := v.checkInputs(map[string]string{
		"profile_url": p.Get("profile_url"), "email": p.Get("email"), "name": p.Get("name"), "company": p.Get("company"),
		"domain": p.Get("domain"),
	})
	if aerr != nil {
		return errorAnswer(aerr.status, aerr.code, aerr.msg)
	}
	var a answer
	hit := v.ProfileHit(q)
	switch {
	case hit:
		a = jsonAnswer(http.StatusOK, makeProfile(q))
	case v.opts.NoMatchAs200:
		a = jsonAnswer(http.StatusOK, map[string]any{"status": "no_match", "name": nil})
	default:
		a = errorAnswer(http.StatusNotFound, "not_found", "no match")
	}
	a.credits, a.inputs, a.lookups = v.opts.Prices.profileCost(q, hit), []string{inputOf(q)}, 1
	return a
}

// GET /v1/email?profile_url=
func (v *Seed) email(r *http.Request, _ []byte) answer {
	u := strings.TrimSpace(r.URL.Query().Get("profile_url"))
	if aerr := v.checkProfileURL(u); aerr != nil {
		return errorAnswer(aerr.status, aerr.code, aerr.msg)
	}
	var a answer
	switch {
	case v.EmailHit(u):
		e := makeEmail(u)
		a = jsonAnswer(http.StatusOK, e)
		a.credits = v.opts.Prices.emailCost(&e)
	case v.opts.NoMatchAs200:
		a = jsonAnswer(http.StatusOK, map[string]any{"email": nil})
		a.credits = v.opts.Prices.emailCost(nil)
	default:
		a = errorAnswer(http.StatusNotFound, "not_found", "no email found")
		a.credits = v.opts.Prices.emailCost(nil)
	}
	a.inputs, a.lookups = []string{"profile_url=" + u}, 1
	return a
}

// GET /v1/phone?profile_url=
func (v *Seed) phone(r *http.Request, _ []byte) answer {
	u := strings.TrimSpace(r.URL.Query().Get("profile_url"))
	if aerr := v.checkProfileURL(u); aerr != nil {
		return errorAnswer(aerr.status, aerr.code, aerr.msg)
	}
	var a answer
	switch {
	case v.PhoneHit(u):
		p := makePhones(u)
		a = jsonAnswer(http.StatusOK, map[string]any{"phones": p})
		a.credits = v.opts.Prices.phoneCost(p)
	case v.opts.NoMatchAs200:
		a = jsonAnswer(http.StatusOK, map[string]any{"phones": []phoneRecord{}})
		a.credits = v.opts.Prices.phoneCost(nil)
	default:
		a = errorAnswer(http.StatusNotFound, "not_found", "no phone found")
		a.credits = v.opts.Prices.phoneCost(nil)
	}
	a.inputs, a.lookups = []string{"profile_url=" + u}, 1
	return a
}

// bulkAnswerJSON is a /v1/bulk answer; bulkResultJSON one of its results.
// Structs rather than maps: the fake vendor shares the benchmark's CPUs with
// what it measures. A field that is a nil pointer is left out; a pointer to
// a nil pointer is sent as null (no match).
type bulkAnswerJSON struct {
	Results []bulkResultJSON `json:"results"`
}

type bulkResultJSON struct {
	Index   int             `json:"index"`
	Error   *errorJSON      `json:"error,omitempty"`
	Profile **profileRecord `json:"profile,omitempty"`
	Email   **emailRecord   `json:"email,omitempty"`
	Phones  *[]phoneRecord  `json:"phones,omitempty"`
}

type errorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// POST /v1/bulk {"rows": [...], "include": ["email", "phone"]}: results in
// shuffled order, matched by index; a bad row gets its own error.
func (v *Seed) bulk(_ *http.Request, body []byte) answer {
	var req struct {
		Rows    *[]json.RawMessage `json:"rows"`
		Include []string           `json:"include"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return errorAnswer(http.StatusBadRequest, "invalid_request", "body is not a JSON object with rows")
	}
	if req.Rows == nil || len(*req.Rows) == 0 {
		return errorAnswer(http.StatusBadRequest, "invalid_request", "rows is required")
	}
	rows := *req.Rows
	if len(rows) > SeedMaxBulkRows {
		return errorAnswer(http.StatusBadRequest, "too_many_rows", "at most 100 rows per call")
	}
	var wantEmail, wantPhone bool
	for _, s := range req.Include {
		switch s {
		case "email":
			wantEmail = true
		case "phone", "phones":
			wantPhone = true
		case "profile":
		default:
			return errorAnswer(http.StatusBadRequest, "invalid_request", "include takes email and phone")
		}
	}
	var a answer
	a.status = http.StatusOK
	results := make([]bulkResultJSON, len(rows))
	for i, raw := range rows {
		res := &results[i]
		res.Index = i
		var in map[string]string
		if err := json.Unmarshal(raw, &in); err != nil || in == nil {
			res.Error = &errorJSON{Code: "invalid_request", Message: "a row is an object of strings"}
			continue
		}
		q, aerr := v.checkInputs(in)
		if aerr != nil {
			res.Error = &errorJSON{Code: aerr.code, Message: aerr.msg}
			continue
		}
		hit := v.ProfileHit(q)
		a.credits += v.opts.Prices.profileCost(q, hit)
		a.lookups++
		a.inputs = append(a.inputs, inputOf(q))
		if !hit {
			res.Profile = new(*profileRecord) // "profile": null
			continue
		}
		rec := makeProfile(q)
		res.Profile = ptr(&rec)
		if wantEmail {
			a.lookups++
			res.Email = new(*emailRecord) // "email": null
			var found *emailRecord
			if v.EmailHit(rec.ProfileURL) {
				e := makeEmail(rec.ProfileURL)
				res.Email, found = ptr(&e), &e
			}
			a.credits += v.opts.Prices.emailCost(found)
		}
		if wantPhone {
			a.lookups++
			res.Phones = ptr([]phoneRecord{})
			if v.PhoneHit(rec.ProfileURL) {
				res.Phones = ptr(makePhones(rec.ProfileURL))
			}
			a.credits += v.opts.Prices.phoneCost(*res.Phones)
		}
	}
	v.mu.Lock()
	v.rng.Shuffle(len(results), func(i, j int) { results[i], results[j] = results[j], results[i] })
	v.mu.Unlock()
	out := jsonAnswer(http.StatusOK, bulkAnswerJSON{Results: results})
	a.body = out.body
	return a
}
