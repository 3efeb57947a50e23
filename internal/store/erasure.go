package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// Person names one person to erase: an email, a profile URL, or a name with
// a company or a domain, each in its canonical form (ingest's).
type Person struct {
	Email, ProfileURL, Name, Company, Domain string
}

// Identity is how the person was named: email, profile_url, name_company or
// name_domain ("" when the fields make none of them).
func (p Person) Identity() string {
	switch {
	case p.Email != "" && p.ProfileURL == "" && p.Name == "":
		return "email"
	case p.ProfileURL != "" && p.Email == "" && p.Name == "":
		return "profile_url"
	case p.Name != "" && p.Company != "" && p.Domain == "" && p.Email == "" && p.ProfileURL == "":
		return "name_company"
	case p.Name != "" && p.Domain != "" && p.Company == "" && p.Email == "" && p.ProfileURL == "":
		return "name_domain"
	}
	return ""
}

// ErasedRow is what a removed row said about its person: its input, and what
// the vendor found for it.
type ErasedRow struct {
	Kind                                  domain.InputKind
	ProfileURL, Name, Company, Domain     string
	Email, Role                           string
	FoundProfileURL, FoundName, FoundComp string
	FoundEmail                            string
}

// EraseRequest is one erasure.
type EraseRequest struct {
	Tenant string
	KeyID  string // the API key that asked (audit)
	Person Person
	// Keys gives the normalised inputs that stand for the person in a removed
	// row: cache is what lookup_cache is keyed by (each is removed, every
	// stage), suppress what later uploads are checked against (stored hashed).
	Keys func(ErasedRow) (cache, suppress []string)
	// Hash is the keyed hash (HMAC) that replaces the personal part of the
	// credit ledger and makes the suppression list.
	Hash func(string) []byte
}

// Erasure is an erasure as listed: its receipt (rows removed or rewritten,
// by table) and whether its suppression was lifted.
type Erasure struct {
	ID        string           `json:"id"`
	Identity  string           `json:"identity"`
	KeyID     string           `json:"key_id"`
	Receipt   map[string]int64 `json:"receipt"`
	CreatedAt time.Time        `json:"created_at"`
	LiftedAt  *time.Time       `json:"lifted_at"`
}

// Erase removes every stored trace of one person of a tenant in one
// transaction and returns the receipt: the person's rows (every row whose
// input or found profile, email, name and company name them, then every row
// of the profile URLs and emails so found), their results, no-match markers
// and feed lines (each replaced by a deleted line), the cache entries of
// their inputs, stored uploads that hold one of the person's values, and
// platform members of the person with their tokens. The credit ledger keeps
// its lines with the Idempotency-Key (a digest of the input) replaced by a
// keyed hash. The person's keyed hashes go on the suppression list, and the
// erasure is a line of the audit log.
func (s *Store) Erase(ctx context.Context, req EraseRequest) (Erasure, error) {
	if err := needTenant(req.Tenant); err != nil {
		return Erasure{}, err
	}
	identity := req.Person.Identity()
	if identity == "" {
		return Erasure{}, errors.New("store: erase: name a person by email, profile URL, or name with company or domain")
	}
	if req.Keys == nil || req.Hash == nil {
		return Erasure{}, errors.New("store: erase: Keys and Hash are required")
	}
	var out Erasure
	// Run again if Postgres broke a deadlock with it (it locks the rows a
	// worker may be saving).
	err := s.retry(ctx, false, func() error {
		return s.inTx(ctx, func(tx pgx.Tx) error {
			// Its finds, costed without fresh statistics for a tenant's
			// size, compiled for longer than they ran.
			if err := noJIT(ctx, tx); err != nil {
				return err
			}
			var err error
			out, err = erase(ctx, tx, req, identity)
			return err
		})
	})
	return out, err
}

// erase is Erase's transaction, step by step: find the person's rows and
// lock them, read what they said, rewrite the ledger's keys, remove the
// rows and what hangs on them, remove stored uploads, add the feed's
// deleted lines, then record the erasure.
func erase(ctx context.Context, tx pgx.Tx, req EraseRequest, identity string) (Erasure, error) {
	ids, members, err := findPerson(ctx, tx, req)
	if err != nil {
		return Erasure{}, err
	}
	keys, err := readPersonKeys(ctx, tx, req, identity, ids)
	if err != nil {
		return Erasure{}, err
	}
	receipt := map[string]int64{}
	if receipt["credit_ledger (rewritten)"], err = rewriteLedgerKeys(ctx, tx, req, ids); err != nil {
		return Erasure{}, err
	}
	if receipt["watch_inputs"], receipt["watch_changes"], err = eraseFromWatches(ctx, tx, req, ids); err != nil {
		return Erasure{}, err
	}
	lines, err := deletePersonRows(ctx, tx, req.Tenant, ids, members, keys.cache, receipt)
	if err != nil {
		return Erasure{}, err
	}
	if receipt["uploads"], err = deleteUploadsOf(ctx, tx, req, keys); err != nil {
		return Erasure{}, err
	}
	// Webhook payloads are made at send time from a job's counts: none holds a person.
	receipt["webhook_deliveries"] = 0
	if len(lines) > 0 {
		if receipt["results_feed_log (deleted lines added)"], err = addDeletedLines(ctx, tx, req.Tenant, lines); err != nil {
			return Erasure{}, err
		}
	}
	return recordErasure(ctx, tx, req, identity, receipt, keys.suppress)
}

// recordErasure stores the erasure with its receipt, its suppression list
// (the keyed hashes of suppress) and its audit line.
func recordErasure(ctx context.Context, tx pgx.Tx, req EraseRequest, identity string, receipt map[string]int64, suppress map[string]bool) (Erasure, error) {
	body, err := json.Marshal(receipt)
	if err != nil {
		return Erasure{}, err
	}
	out := Erasure{Identity: identity, KeyID: req.KeyID, Receipt: receipt}
	if err := tx.QueryRow(ctx, `INSERT INTO erasures (tenant, key_id, identity, receipt) VALUES ($1, $2, $3, $4)
		RETURNING id::text, created_at`, req.Tenant, req.KeyID, identity, body).Scan(&out.ID, &out.CreatedAt); err != nil {
		return Erasure{}, interpretError(err)
	}
	hashes := make([][]byte, 0, len(suppress))
	for k := range suppress {
		hashes = append(hashes, req.Hash(k))
	}
	if _, err := tx.Exec(ctx, `INSERT INTO suppressions (tenant, person_hash, erasure_id)
		SELECT $1, h, $3 FROM unnest($2::bytea[]) AS h ON CONFLICT DO NOTHING`, req.Tenant, hashes, out.ID); err != nil {
		return Erasure{}, interpretError(err)
	}
	if err := appendAudit(ctx, tx, AuditLine{Tenant: req.Tenant, KeyID: req.KeyID, Action: AuditErasure, Subject: out.ID,
		Rows: receipt["job_rows"] + receipt["platform_members"]}); err != nil {
		return Erasure{}, err
	}
	out.CreatedAt = out.CreatedAt.UTC()
	return out, nil
}

// Erasures lists a tenant's erasures, newest first.
func (s *Store) Erasures(ctx context.Context, tenant string) ([]Erasure, error) {
	if err := needTenant(tenant); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id::text, identity, key_id, receipt, created_at, lifted_at FROM erasures
		WHERE tenant = $1 ORDER BY created_at DESC, id`, tenant)
	if err != nil {
		return nil, interpretError(err)
	}
	out := []Erasure{}
	var e Erasure
	_, err = pgx.ForEachRow(rows, []any{&e.ID, &e.Identity, &e.KeyID, &e.Receipt, &e.CreatedAt, &e.LiftedAt}, func() error {
		e.CreatedAt = e.CreatedAt.UTC()
		out = append(out, e)
		e = Erasure{}
		return nil
	})
	return out, interpretError(err)
}

// LiftErasure lifts the suppression of a tenant's erasure: the person's
// inputs may be bought again. What was removed stays removed. ErrNotFound
// for no such erasure of the tenant; lifting twice keeps the first time.
func (s *Store) LiftErasure(ctx context.Context, tenant, keyID, id string) (Erasure, error) {
	if err := needTenant(tenant); err != nil {
		return Erasure{}, err
	}
	if _, err := uuid.Parse(id); err != nil {
		return Erasure{}, ErrNotFound
	}
	var out Erasure
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE erasures SET lifted_at = coalesce(lifted_at, now()) WHERE tenant = $1 AND id = $2
			RETURNING id::text, identity, key_id, receipt, created_at, lifted_at`, tenant, id).
			Scan(&out.ID, &out.Identity, &out.KeyID, &out.Receipt, &out.CreatedAt, &out.LiftedAt)
		if err != nil {
			return interpretError(err)
		}
		n, err := exec(ctx, tx, `DELETE FROM suppressions WHERE erasure_id = $1`, id)
		if err != nil {
			return err
		}
		return appendAudit(ctx, tx, AuditLine{Tenant: tenant, KeyID: keyID, Action: AuditErasureLifted, Subject: id, Rows: n})
	})
	out.CreatedAt = out.CreatedAt.UTC()
	return out, err
}
