package httpapi

import (
	"net/http"
	"strconv"

	"github.com/enrichq/enrichq/internal/service"
)

// The feed's bodies are the service's views (service.FeedLine, service.FeedPage).
type (
	feedLine = service.FeedLine
	feedPage = service.FeedPage
)

// resultsFeed is GET /v1/results?since=SEQ&limit=N: the tenant's results
// and no-match markers of every job, in feed order, after position since (0:
// from the start); next_since is the position to ask for next (service.Feed).
func (s *server) resultsFeed(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var since int64
	if v := q.Get("since"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.writeError(w, r, badParam("since", "since %q is not a feed position (a whole number >= 0)", clip(v)))
			return
		}
		since = n
	}
	limit, err := limitParam(q, service.DefaultFeedLimit, service.MaxFeedLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.svc.Feed(r.Context(), principalFrom(r.Context()), since, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	_ = writeJSONPage(w, "results", len(out.Results), func(i int) any { return out.Results[i] },
		"next_since", out.NextSince) // a write error means the client is gone
}
