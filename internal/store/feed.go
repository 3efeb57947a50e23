package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// Kinds of results feed lines.
const (
	FeedProfile = "profile"
	FeedEmail   = "email"
	FeedPhone   = "phone"
	FeedNoMatch = "no_match"
	// FeedDeleted withdraws an earlier line (DeletedSeq) whose result an
	// erasure removed: the ETL deletes it downstream too.
	FeedDeleted = "deleted"
	// FeedChanged is a change a watch's run found (Change): its row is the
	// run's row that answered.
	FeedChanged = "changed"
)

// FeedChange is what a line of kind changed says.
type FeedChange struct {
	WatchID string
	Field   string // company, role, email, phones, location, match
	Old     *string
	New     *string
	Kind    string // changed, left, not_found_any_more
	Vendor  string
	At      time.Time
}

// FeedItem is one line of the results feed (the view results_feed): a result
// of one stage (Kind profile, email or phone) or a no-match marker (Kind
// no_match, Stage the stage that found nothing), with its row's input.
type FeedItem struct {
	Seq  int64  // the feed position
	Kind string // profile, email, phone, no_match, deleted
	// DeletedSeq is the position of the line a deleted line withdraws.
	DeletedSeq int64
	Stage      domain.Stage
	JobID      string
	RowID      int64
	SourceSeq  int64 // seq in the kind's table
	InputRow   int
	Ref        string
	InputKind  domain.InputKind
	// The row's input ("" when not given).
	ProfileURL, Name, Company, Domain, Email, Role string
	Extra                                          map[string]string
	Source                                         string
	FromCache                                      bool
	FetchedAt                                      time.Time

	Profile     *ProfileResult // Kind profile
	FoundEmail  *EmailResult   // Kind email
	FoundPhones *PhoneResult   // Kind phone
	Change      *FeedChange    // Kind changed
}

// MaxFeedPageBytes bounds the data of one ResultsFeed page, about.
const MaxFeedPageBytes = 8 << 20

// AdvanceResultsFeed puts the results committed since the last advance into
// the feed (results_feed_advance(), see migrations/00001_schema.sql) and returns
// how many. Advances take turns; each commits before the next starts, which
// is what makes feed positions safe to read with "seq > last".
func (s *Store) AdvanceResultsFeed(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT results_feed_advance()`).Scan(&n)
	return n, interpretError(err)
}

// ResultsFeed returns up to limit lines of tenant's results feed after
// position since, in position order, and fewer once the lines read hold
// MaxFeedPageBytes of data (at least one): the reader goes on from the last.
// It reads what AdvanceResultsFeed has logged: call that first to include
// the latest results.
func (s *Store) ResultsFeed(ctx context.Context, tenant string, since int64, limit int) ([]FeedItem, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	var out []FeedItem
	err := s.inPageTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = readFeedPage(ctx, tx, tenant, since, limit)
		return err
	})
	return out, err
}

// readFeedPage reads a page of resultsFeedSQL in tx (see ResultsFeed).
func readFeedPage(ctx context.Context, tx pgx.Tx, tenant string, since int64, limit int) ([]FeedItem, error) {
	rows, err := tx.Query(ctx, resultsFeedSQL, tenant, since, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	var (
		out                        []FeedItem
		it                         FeedItem
		extra                      string
		fetched                    *time.Time
		url, name, head, comp, rl  string
		loc, size, ind             string
		tech                       []string
		email, phones, pNum, pType string
		conf                       float64
		verified                   bool
		status                     string
		read                       int64
		ch                         FeedChange
		chOld, chNew               *string
		chAt                       *time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&it.Seq, &it.Kind, &it.Stage, &it.JobID, &it.RowID, &it.SourceSeq, &it.InputRow, &it.Ref,
		&it.InputKind, &it.ProfileURL, &it.Name, &it.Company, &it.Email, &it.Role, &extra, &it.Source, &it.FromCache, &fetched,
		&url, &name, &head, &comp, &rl, &loc, &size, &ind, &tech, &email, &conf, &verified, &phones, &pNum, &pType, &it.Domain, &it.DeletedSeq,
		&ch.WatchID, &ch.Field, &chOld, &chNew, &ch.Kind, &ch.Vendor, &chAt, &status}, func() error {
		if read >= MaxFeedPageBytes {
			return errPageFull
		}
		read += rowBytes + int64(len(extra)+len(phones))
		item := it
		if extra != "" {
			if err := json.Unmarshal([]byte(extra), &item.Extra); err != nil {
				return err
			}
		}
		if fetched != nil {
			item.FetchedAt = fetched.UTC()
		}
		switch item.Kind {
		case FeedProfile:
			item.Profile = &ProfileResult{ProfileURL: url, Name: name, Headline: head, Company: comp, Role: rl,
				Location: loc, CompanySize: size, Industry: ind, Technographics: tech}
		case FeedEmail:
			item.FoundEmail = &EmailResult{ProfileURL: url, Email: email, Confidence: conf, Verified: verified, Status: status}
		case FeedPhone:
			item.FoundPhones = &PhoneResult{ProfileURL: url, Phones: []byte(phones), PrimaryNumber: pNum, PrimaryType: pType}
		case FeedChanged:
			c := ch
			c.Old, c.New = chOld, chNew
			if chAt != nil {
				c.At = chAt.UTC()
			}
			item.Change = &c
		}
		out = append(out, item)
		it, tech, fetched = FeedItem{}, nil, nil
		return nil
	})
	if errors.Is(err, errPageFull) {
		err = nil
	}
	return out, interpretError(err)
}

// resultsFeedSQL reads a page of the results feed: lines of tenant $1 after
// position $2, up to $3.
const resultsFeedSQL = `
		SELECT seq, kind, stage, job_id::text, row_id, source_seq, coalesce(input_row, 0), coalesce(ref, ''), coalesce(input_kind, ''),
			coalesce(input_profile_url, ''), coalesce(input_name, ''), coalesce(input_company, ''), coalesce(input_email, ''),
			coalesce(input_role, ''), coalesce(extra::text, ''), coalesce(source, ''), coalesce(from_cache, false), fetched_at,
			coalesce(profile_url, ''), coalesce(name, ''), coalesce(headline, ''), coalesce(company, ''), coalesce(role, ''),
			coalesce(location, ''), coalesce(company_size, ''), coalesce(industry, ''), technographics,
			coalesce(email, ''), coalesce(confidence, 0), coalesce(verified, false),
			coalesce(phones::text, ''), coalesce(primary_number, ''), coalesce(primary_type, ''), coalesce(input_domain, ''),
			coalesce(deleted_seq, 0),
			coalesce(change_watch_id::text, ''), coalesce(change_field, ''), change_old, change_new, coalesce(change_kind, ''),
			coalesce(change_vendor, ''), change_at, coalesce(email_status, '')
		FROM results_feed
		WHERE tenant = $1 AND seq > $2
		ORDER BY seq
		LIMIT $3`
