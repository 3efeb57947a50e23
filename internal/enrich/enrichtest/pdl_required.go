package enrichtest

import (
	"errors"
	"fmt"
	"strings"
)

// The PDL fake's "required": a boolean expression of record fields, as the
// vendor takes it: "work_email", "emails AND (mobile_phone OR
// phone_numbers)". AND binds tighter than OR; a comma is an AND. A match
// whose record does not satisfy it is a 404, free.

// requiredExpr is a parsed expression: a field, or an AND or OR of parts.
type requiredExpr struct {
	field string
	op    string // "AND", "OR"; "" for a field
	parts []*requiredExpr
}

// holds evaluates e on a record.
func (e *requiredExpr) holds(per person) bool {
	switch e.op {
	case "AND":
		for _, x := range e.parts {
			if !x.holds(per) {
				return false
			}
		}
		return true
	case "OR":
		for _, x := range e.parts {
			if x.holds(per) {
				return true
			}
		}
		return false
	}
	has, _ := per.has(e.field)
	return has
}

// parseRequired parses s; nil, nil for an empty one. An unknown field, or
// an expression that does not parse, is an error.
func parseRequired(s string) (*requiredExpr, error) {
	toks := requiredTokens(s)
	if len(toks) == 0 {
		return nil, nil
	}
	p := &requiredParser{toks: toks}
	e, err := p.or()
	if err == nil && p.i < len(p.toks) {
		err = fmt.Errorf("unexpected %q", p.toks[p.i])
	}
	return e, err
}

func requiredTokens(s string) []string {
	s = strings.NewReplacer("(", " ( ", ")", " ) ", ",", " AND ").Replace(s)
	return strings.Fields(s)
}

type requiredParser struct {
	toks []string
	i    int
}

func (p *requiredParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *requiredParser) or() (*requiredExpr, error) {
	return p.list("OR", p.and)
}

func (p *requiredParser) and() (*requiredExpr, error) {
	return p.list("AND", p.factor)
}

func (p *requiredParser) list(op string, next func() (*requiredExpr, error)) (*requiredExpr, error) {
	first, err := next()
	if err != nil {
		return nil, err
	}
	e := &requiredExpr{op: op, parts: []*requiredExpr{first}}
	for strings.EqualFold(p.peek(), op) {
		p.i++
		x, err := next()
		if err != nil {
			return nil, err
		}
		e.parts = append(e.parts, x)
	}
	if len(e.parts) == 1 {
		return first, nil
	}
	return e, nil
}

func (p *requiredParser) factor() (*requiredExpr, error) {
	t := p.peek()
	switch {
	case t == "":
		return nil, errors.New("an expression ends early")
	case t == "(":
		p.i++
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, errors.New("a parenthesis is not closed")
		}
		p.i++
		return e, nil
	case t == ")" || strings.EqualFold(t, "AND") || strings.EqualFold(t, "OR"):
		return nil, fmt.Errorf("unexpected %q", t)
	}
	p.i++
	if _, known := (person{}).has(t); !known {
		return nil, fmt.Errorf("unknown field %q", t)
	}
	return &requiredExpr{field: t}, nil
}
