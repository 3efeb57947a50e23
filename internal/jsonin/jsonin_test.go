package jsonin

import (
	"errors"
	"strings"
	"testing"
)

type inner struct {
	Company string `json:"company"`
}

type doc struct {
	Name    string            `json:"name"`
	Budget  *int64            `json:"budget_credits"`
	Members []string          `json:"members"`
	Rows    []inner           `json:"rows"`
	Extra   map[string]string `json:"extra"`
}

// Every refusal names its field in words; integers decode exactly.
func TestDecode(t *testing.T) {
	t.Parallel()
	var d doc
	if err := Decode([]byte(`{"budget_credits": 9007199254740993, "members": ["a"]}`), &d); err != nil || *d.Budget != 9007199254740993 {
		t.Fatalf("exact integer: %v %v", err, d.Budget)
	}
	for body, want := range map[string]string{
		`{"name": "a\u0000b"}`:                     "name: contains the control character U+0000",
		`{"members": ["ok", "x\u001fy"]}`:          "members[1]: contains the control character U+001F",
		`{"rows": [{"company": "A\u0085"}]}`:       "rows[0].company: contains the control character U+0085",
		`{"extra": {"k\u0000": "v"}}`:              `extra."k\x00": the key contains the control character U+0000`,
		`{"budget_credits": 10.5}`:                 "budget_credits: 10.5 is not a whole number: give a whole number from -9223372036854775808 to 9223372036854775807",
		`{"budget_credits": 1e30}`:                 "budget_credits: 1e30 is out of range",
		`{"budget_credits": 99999999999999999999}`: "budget_credits: 99999999999999999999 is out of range",
		`{"budget_credits": "10"}`:                 "budget_credits: must be a whole number, not a string",
		`{"members": "all"}`:                       "members: must be a list, not a string",
		`{"salary": 1}`:                            "salary: is not a field here; the fields are name, budget_credits, members, rows, extra",
		`{"name": "a"} {}`:                         "more than one JSON value",
		`{"name": `:                                "the JSON ends in the middle of a value",
		"{\"name\": \"\xff\"}":                     "not valid UTF-8 (at byte 10)",
		`[1]`:                                      "the document must be an object, not array",
	} {
		var d doc
		err := Decode([]byte(body), &d)
		var e *Error
		if !errors.As(err, &e) || !strings.HasPrefix(e.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
		if e != nil && strings.Contains(e.Error(), "int64") {
			t.Errorf("%s: names a Go type: %v", body, e)
		}
	}
}
