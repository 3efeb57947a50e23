package service

import (
	"context"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// Feed paging.
const (
	DefaultFeedLimit = 1000
	MaxFeedLimit     = 10000
)

// FeedLine is one line of the results feed: a result of one stage (kind
// profile, email or phone) or a no-match marker (kind no_match; stage is the
// lookup that found nothing), with the input of its row. Field names are
// those of the job results (ResultLine); the found fields of other kinds are
// null. For email and phone lines, found_profile_url is the profile the
// lookup was made for.
type FeedLine struct {
	Seq        int64             `json:"seq"`
	Kind       string            `json:"kind"`
	Stage      domain.Stage      `json:"stage"`
	JobID      string            `json:"job_id"`
	Row        int               `json:"row"`
	Ref        string            `json:"ref"`
	ProfileURL string            `json:"profile_url"`
	Name       string            `json:"name"`
	Company    string            `json:"company"`
	Domain     string            `json:"domain"`
	InputEmail string            `json:"input_email"`
	Role       string            `json:"role"`
	Extra      map[string]string `json:"extra"`
	Source     string            `json:"source"`
	FromCache  bool              `json:"from_cache"`
	FetchedAt  *time.Time        `json:"fetched_at"`

	Found

	// DeletedSeq, on a line of kind deleted, is the position of the line it
	// withdraws (an erasure removed that result: delete it downstream too);
	// the row, job and stage are those of that line, the input is empty.
	DeletedSeq *int64 `json:"deleted_seq,omitempty"`

	// Change, on a line of kind changed, is what a watch's run found
	// changed for the row's person (docs/watches.md).
	Change *FeedChange `json:"change,omitempty"`
}

// FeedChange is a change line of a watch, in the feed.
type FeedChange struct {
	WatchID string    `json:"watch_id"`
	Field   string    `json:"field"`
	Old     *string   `json:"old"`
	New     *string   `json:"new"`
	Kind    string    `json:"kind"`
	Vendor  string    `json:"vendor"`
	At      time.Time `json:"at"`
}

// FeedPage is a page of the feed and the position to ask for next.
type FeedPage struct {
	Results   []FeedLine `json:"results"`
	NextSince int64      `json:"next_since"`
}

// FeedLineOf is the feed line of a stored feed item.
func FeedLineOf(it store.FeedItem) FeedLine {
	l := FeedLine{
		Seq: it.Seq, Kind: it.Kind, Stage: it.Stage, JobID: it.JobID, Row: it.InputRow, Ref: it.Ref,
		ProfileURL: it.ProfileURL, Name: it.Name, Company: it.Company, Domain: it.Domain, InputEmail: it.Email, Role: it.Role, Extra: it.Extra,
		Source: it.Source, FromCache: it.FromCache,
	}
	if l.Extra == nil {
		l.Extra = map[string]string{}
	}
	if !it.FetchedAt.IsZero() {
		t := it.FetchedAt.UTC()
		l.FetchedAt = &t
	}
	if it.Kind == store.FeedDeleted {
		d := it.DeletedSeq
		l.DeletedSeq = &d
	}
	if c := it.Change; c != nil {
		l.Change = &FeedChange{WatchID: c.WatchID, Field: c.Field, Old: c.Old, New: c.New, Kind: c.Kind, Vendor: c.Vendor, At: c.At}
	}
	switch {
	case it.Profile != nil:
		l.setProfile(it.Profile)
	case it.FoundEmail != nil:
		l.FoundProfileURL = orNull(it.FoundEmail.ProfileURL)
		l.setEmail(it.FoundEmail)
	case it.FoundPhones != nil:
		l.FoundProfileURL = orNull(it.FoundPhones.ProfileURL)
		l.setPhones(it.FoundPhones)
	}
	return l
}

// Feed returns the tenant's results and no-match markers of every job, in
// feed order, after position since (0: from the start), up to limit lines
// (0 or less: DefaultFeedLimit; above MaxFeedLimit, MaxFeedLimit) (scope
// read). NextSince is the position to ask for next (since itself when
// nothing is new). A line's position is handed out once its transaction has
// committed, and positions appear in order: a client that stores NextSince
// reads every line exactly once. See migrations/00001_schema.sql, "The feed".
func (s *Service) Feed(ctx context.Context, p Principal, since int64, limit int) (FeedPage, error) {
	if err := p.Require(domain.ScopeRead); err != nil {
		return FeedPage{}, err
	}
	if since < 0 {
		return FeedPage{}, invalidParam("since", "since %d is not a feed position (a whole number >= 0)", since)
	}
	if limit <= 0 {
		limit = DefaultFeedLimit
	}
	limit = min(limit, MaxFeedLimit)
	// Log what committed since the last advance, so the answer is current.
	if _, err := s.store.AdvanceResultsFeed(ctx); err != nil {
		return FeedPage{}, err
	}
	items, err := s.store.ResultsFeed(ctx, p.Tenant, since, limit)
	if err != nil {
		return FeedPage{}, err
	}
	out := FeedPage{Results: make([]FeedLine, 0, len(items)), NextSince: since}
	for _, it := range items {
		out.Results = append(out.Results, FeedLineOf(it))
		out.NextSince = it.Seq
	}
	if err := s.audit(ctx, p, store.AuditFeedRead, "", len(out.Results)); err != nil {
		return FeedPage{}, err
	}
	return out, nil
}
