package enrichtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
)

// ServeEdited serves r with h and lets edit change a 200 JSON object
// answer before it goes out (a person who moved to another company between
// two runs); other answers go out as h wrote them.
func ServeEdited(w http.ResponseWriter, r *http.Request, h http.Handler, edit func(answer map[string]any)) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	var m map[string]any
	if rec.Code == http.StatusOK && json.Unmarshal(body, &m) == nil {
		edit(m)
		body, _ = json.Marshal(m)
	}
	for k, vs := range rec.Header() {
		if k != "Content-Length" {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}
