package config

// The vendors file's fields of one kind of vendor: pdl's likelihood floors,
// required fields and batch size, hunter's price of a verification.

import (
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/enrichq/enrichq/internal/domain"
)

// pdlOnly are the fields only a pdl vendor takes.
var pdlOnly = []string{"min_likelihood", "required", "batch_size"}

// hunterOnly are the fields only a hunter vendor takes.
var hunterOnly = []string{"verify_credit_value"}

// kindSpecific reads the fields of one kind (pdl's, hunter's), and reports them
// on any other kind.
func (r *entryReader) kindSpecific(s *VendorSpec) {
	switch s.Kind {
	case "":
	case VendorPDL:
		s.BatchSize = DefaultPDLBatchSize
		var bs int64 = DefaultPDLBatchSize
		r.whole("batch_size", &bs, 1, 100, " (the vendor advises at most 80)")
		s.BatchSize = int(bs)
		r.minLikelihood(s)
		r.required(s)
		r.only(hunterOnly, VendorHunter)
	case VendorHunter:
		r.only(pdlOnly, VendorPDL)
		verifyValue := int64(DefaultCreditValue)
		r.whole("verify_credit_value", &verifyValue, 1, 1_000_000, ": what one verification is worth in budget units, as credit_value is one search's")
		g := gcd(s.CreditValue, verifyValue)
		s.SearchCredits, s.VerifyCredits, s.CreditValue = s.CreditValue/g, verifyValue/g, g
	default:
		r.only(pdlOnly, VendorPDL)
		r.only(hunterOnly, VendorHunter)
	}
}

// only reports the fields of another kind present on this entry.
func (r *entryReader) only(fields []string, kind VendorKind) {
	for _, k := range fields {
		if f := r.fields[k]; f != nil {
			r.bad(k, f, "only for kind %s", kind)
		}
	}
}

// pdlInputKinds are the input kinds a pdl vendor's min_likelihood names.
var pdlInputKinds = []domain.InputKind{domain.InputProfileURL, domain.InputEmail, domain.InputNameCompany, domain.InputNameDomain}

// pdlStages are the stages a pdl vendor's required names.
var pdlStages = []domain.Stage{domain.StageProfile, domain.StageEmail, domain.StagePhone}

// minLikelihood reads min_likelihood: a floor for every input kind, or a
// mapping of input kind to floor.
func (r *entryReader) minLikelihood(s *VendorSpec) {
	f := r.fields["min_likelihood"]
	if f == nil {
		return
	}
	floor := func(n *yaml.Node, what string) (int, bool) {
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if n.Kind != yaml.ScalarNode || err != nil || v < 1 || v > 10 {
			r.bad("min_likelihood", n, "%s%q: want a whole number from 1 to 10", what, n.Value)
			return 0, false
		}
		return int(v), true
	}
	s.MinLikelihood = map[domain.InputKind]int{}
	if f.Kind == yaml.ScalarNode {
		if v, ok := floor(f, ""); ok {
			for _, k := range pdlInputKinds {
				s.MinLikelihood[k] = v
			}
		}
		return
	}
	if f.Kind != yaml.MappingNode || len(f.Content) == 0 {
		r.bad("min_likelihood", f, "want a floor from 1 to 10, or a mapping of input kind (%s) to floor", joinKinds(pdlInputKinds))
		return
	}
	for k := 0; k+1 < len(f.Content); k += 2 {
		key, val := f.Content[k], f.Content[k+1]
		kind := domain.InputKind(key.Value)
		if !slices.Contains(pdlInputKinds, kind) {
			r.bad("min_likelihood", key, "unknown input kind %q; the kinds are %s", key.Value, joinKinds(pdlInputKinds))
			continue
		}
		if v, ok := floor(val, key.Value+": "); ok {
			s.MinLikelihood[kind] = v
		}
	}
}

// required reads required: an expression for every stage, or a mapping of
// stage to expression ("" for none).
func (r *entryReader) required(s *VendorSpec) {
	f := r.fields["required"]
	if f == nil {
		return
	}
	s.Required = map[domain.Stage]string{}
	if f.Kind == yaml.ScalarNode && f.Tag != "!!null" {
		e := strings.TrimSpace(f.Value)
		if e == "" {
			r.bad("required", f, "want a field expression such as work_email, or a mapping of stage (profile, email, phone) to expression")
			return
		}
		for _, st := range pdlStages {
			s.Required[st] = e
		}
		return
	}
	if f.Kind != yaml.MappingNode || len(f.Content) == 0 {
		r.bad("required", f, "want a field expression such as work_email, or a mapping of stage (profile, email, phone) to expression")
		return
	}
	for k := 0; k+1 < len(f.Content); k += 2 {
		key, val := f.Content[k], f.Content[k+1]
		st := domain.Stage(key.Value)
		switch {
		case !slices.Contains(pdlStages, st):
			r.bad("required", key, "unknown stage %q; the stages are profile, email, phone", key.Value)
		case val.Kind != yaml.ScalarNode:
			r.bad("required", val, "%s: want a field expression such as work_email, or \"\" for none", key.Value)
		case val.Tag == "!!null":
			s.Required[st] = ""
		default:
			s.Required[st] = strings.TrimSpace(val.Value)
		}
	}
}

func joinKinds(ks []domain.InputKind) string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return strings.Join(out, ", ")
}

// gcd is the greatest common divisor of two whole numbers from 1.
func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return max(a, 1)
}
