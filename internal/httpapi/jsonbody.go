package httpapi

import (
	"errors"
	"io"
	"net/http"

	"github.com/enrichq/enrichq/internal/ingest"
	"github.com/enrichq/enrichq/internal/jsonin"
)

// maxJSONBody bounds the small JSON bodies (PATCH of a job or the account,
// an erasure); the job body has the upload limit, a member sync its own.
const maxJSONBody = 64 << 10

// readJSON reads r's body, at most max bytes, into v with jsonin, the one
// reader of every JSON body but the job's (which internal/ingest streams,
// with the same refusals). A refusal is a 400 with code, naming the field.
func readJSON(w http.ResponseWriter, r *http.Request, max int64, code string, v any) error {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		return &bodyError{err}
	}
	return jsonError(code, jsonin.Decode(data, v))
}

// jsonError is err of jsonin as the API's 400 with code; other errors pass.
func jsonError(code string, err error) error {
	var je *jsonin.Error
	if !errors.As(err, &je) {
		return err
	}
	ae := errorf(http.StatusBadRequest, code, "%s", je.Error())
	if je.Field != "" {
		ae.Details = []ingest.FieldError{{Column: je.Field, Message: je.Message}}
	}
	return ae
}
