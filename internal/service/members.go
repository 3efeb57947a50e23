package service

import (
	"context"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// Member is a platform member as a person of the tenant sees it: who, and
// whether their connection works. Never its token.
type Member struct {
	ID           string
	Name         string
	Email        string
	Headline     string
	NeedsReauth  bool   // the member must go through the consent screen again
	StatusReason string // why, when NeedsReauth
	ConnectedAt  time.Time
	// EndsAt is when the connection stops working unless renewed; nil when unknown.
	EndsAt *time.Time
}

// MaxMembersListed caps PlatformMembers.
const MaxMembersListed = 500

// PlatformMembers lists the tenant's platform members in the order they
// connected, at most MaxMembersListed (scope read).
func (s *Service) PlatformMembers(ctx context.Context, p Principal) ([]Member, error) {
	if err := p.Require(domain.ScopeRead); err != nil {
		return nil, err
	}
	list, err := s.store.ListPlatformMembers(ctx, p.Tenant, store.MemberFilter{Limit: MaxMembersListed})
	if err != nil {
		return nil, err
	}
	out := make([]Member, 0, len(list))
	for _, m := range list {
		out = append(out, Member{ID: m.ID, Name: m.Name, Email: m.Email, Headline: m.Headline,
			NeedsReauth: m.Status == store.MemberNeedsReauth, StatusReason: m.StatusReason,
			ConnectedAt: m.ConnectedAt.UTC(), EndsAt: utc(m.ConnectionEndsAt())})
	}
	return out, nil
}
