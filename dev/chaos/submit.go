package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// uploadCSV is n unique lookups tagged with the phase: a fifth by profile
// URL, a fifth by email, the rest companies (one role each); the first
// poisonRows companies carry the fake vendor's reject substring.
func uploadCSV(tag string, n, poisonRows int) []byte {
	var b bytes.Buffer
	b.WriteString("ref,company,profile_url,email,crm_owner\n")
	companies := 0
	for i := range n {
		ref := fmt.Sprintf("%s-%05d", tag, i)
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "%s,,https://platform.example/in/%s-person-%d,,owner-%d\n", ref, tag, i, i%7)
		case 1:
			fmt.Fprintf(&b, "%s,,,person%d@%s-co%d.example,owner-%d\n", ref, i, tag, i, i%7)
		default:
			name := fmt.Sprintf("%s Company %d GmbH", strings.ToUpper(tag[:1])+tag[1:], i)
			if companies < poisonRows {
				name = poison + " " + name
			}
			companies++
			fmt.Fprintf(&b, "%s,%s,,,owner-%d\n", ref, name, i%7)
		}
	}
	return b.Bytes()
}

// companiesCSV is n unique companies tagged with the phase (one role each
// by the job's roles): every lookup a search by name and company.
func companiesCSV(tag string, n int) []byte {
	var b bytes.Buffer
	b.WriteString("ref,company\n")
	for i := range n {
		fmt.Fprintf(&b, "%s-%05d,%s Company %d GmbH\n", tag, i, strings.ToUpper(tag[:1])+tag[1:], i)
	}
	return b.Bytes()
}

func (e *env) submitPath(ph *phase) string {
	q := url.Values{"name": {"chaos: " + ph.title}, "roles": {"VP Sales"}, "lookups": {e.o.lookups}}
	return "/v1/jobs?" + q.Encode()
}

func (e *env) submit(ctx context.Context, ph *phase, poisonRows int) error {
	body := uploadCSV(e.tag(ph), e.o.rows, poisonRows)
	if ph.name == chargedMisses {
		body = companiesCSV(e.tag(ph), e.o.rows)
	}
	st, data, err := httpDo(ctx, http.MethodPost, e.apiURL+e.submitPath(ph), "text/csv", body,
		map[string]string{"Authorization": "Bearer " + apiKey}, time.Minute)
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	if st != http.StatusCreated {
		return fmt.Errorf("submit: %d %s", st, strings.TrimSpace(string(data)))
	}
	var js struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &js); err != nil {
		return err
	}
	ph.jobID, ph.expected = js.ID, e.o.rows
	return nil
}

func (e *env) tag(ph *phase) string {
	return strings.ReplaceAll(ph.name, "-", "") + e.stamp[len(e.stamp)-6:]
}
