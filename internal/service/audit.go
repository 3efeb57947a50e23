package service

import (
	"context"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/store"
)

// Audit paging.
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 1000
)

// AuditLine is a line of the tenant's audit log.
type AuditLine = store.AuditLine

// AuditPage is a page of the audit log and the position to ask for next.
type AuditPage struct {
	Lines     []AuditLine `json:"lines"`
	NextSince int64       `json:"next_since"`
}

// Audit returns the tenant's audit log after line since (0: from the
// start), oldest first, up to limit lines (0 or less: DefaultAuditLimit;
// at most MaxAuditLimit) (scope read).
func (s *Service) Audit(ctx context.Context, p Principal, since int64, limit int) (AuditPage, error) {
	if err := p.Require(domain.ScopeRead); err != nil {
		return AuditPage{}, err
	}
	if since < 0 {
		return AuditPage{}, invalidParam("since", "since %d is not an audit position (a whole number >= 0)", since)
	}
	if limit <= 0 {
		limit = DefaultAuditLimit
	}
	limit = min(limit, MaxAuditLimit)
	lines, err := s.store.AuditLog(ctx, p.Tenant, since, limit)
	if err != nil {
		return AuditPage{}, err
	}
	out := AuditPage{Lines: lines, NextSince: since}
	if n := len(lines); n > 0 {
		out.NextSince = lines[n-1].Seq
	}
	return out, nil
}

// audit appends a line for what p just did.
func (s *Service) audit(ctx context.Context, p Principal, action, subject string, rows int) error {
	return s.store.Audit(ctx, store.AuditLine{Tenant: p.Tenant, KeyID: p.KeyID, Action: action, Subject: subject, Rows: int64(rows)})
}
