package jsonin

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type nullable struct {
	Raw  json.RawMessage `json:"raw"`
	Any  any             `json:"any"`
	Rows []inner         `json:"rows"`
}

// null is refused wherever the target cannot say it (a string, a number,
// a list, an object, a pointer), naming the place; an interface and
// json.RawMessage take it (their reader decides).
func TestNullRefused(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"name": null}`:                     "name: cannot be null: leave it out, or give a string",
		`{"members": null}`:                  "members: cannot be null: leave it out, or give a list",
		`{"members": ["a", null]}`:           "members[1]: cannot be null",
		`{"budget_credits": null}`:           "budget_credits: cannot be null: leave it out, or give a whole number",
		`{"rows": [{"company": "A"}, null]}`: "rows[1]: cannot be null",
		`{"rows": [{"company": null}]}`:      "rows[0].company: cannot be null",
		`{"extra": {"k": null}}`:             "extra.k: cannot be null",
		`{"extra": null}`:                    "extra: cannot be null",
		`{"NAME": null}`:                     "NAME: cannot be null",
		`null`:                               "the document must be an object, not null",
	} {
		var d doc
		err := Decode([]byte(body), &d)
		var e *Error
		if !errors.As(err, &e) || !strings.HasPrefix(e.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	var n nullable
	if err := Decode([]byte(`{"raw": null, "any": null, "rows": [{"company": "null"}]}`), &n); err != nil || string(n.Raw) != "null" {
		t.Errorf("null where the target takes it: %v (raw %q)", err, n.Raw)
	}
	var m map[string]json.RawMessage
	if err := Decode([]byte(`{"budget_credits": null}`), &m); err != nil || string(m["budget_credits"]) != "null" {
		t.Errorf("a map of raw values: %v %q", err, m)
	}
}
