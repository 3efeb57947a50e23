package httpapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"
)

// writeJSONPage answers 200 with {"<list>": [item(0), ..., item(n-1)],
// "<key>": value}, encoding one element at a time through a small buffer:
// a page's JSON is never held whole in memory. A write error means the
// client is gone: it is returned for the caller to stop.
func writeJSONPage(w http.ResponseWriter, list string, n int, item func(i int) any, key string, value any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	bw.WriteString("{" + strconv.Quote(list) + ":[")
	for i := range n {
		if i > 0 {
			bw.WriteByte(',')
		}
		if err := enc.Encode(item(i)); err != nil {
			return err
		}
	}
	bw.WriteString("]," + strconv.Quote(key) + ":")
	if err := enc.Encode(value); err != nil {
		return err
	}
	bw.WriteString("}\n")
	return bw.Flush()
}
