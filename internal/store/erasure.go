package store

import (
	"context"
	"encoding/hex"
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
			var err error
			out, err = erase(ctx, tx, req, identity)
			return err
		})
	})
	return out, err
}

func erase(ctx context.Context, tx pgx.Tx, req EraseRequest, identity string) (Erasure, error) {
	p := req.Person
	args := pgx.NamedArgs{"tenant": req.Tenant, "email": p.Email, "url": p.ProfileURL,
		"name": normText(p.Name), "company": normText(p.Company), "domain": p.Domain}
	receipt := map[string]int64{}

	// 1. Platform members of the person (by email or profile URL): their sync rows are the person's rows too.
	members, err := collect[string](ctx, tx, `SELECT id::text FROM platform_members m
		WHERE m.tenant = @tenant AND (
			(@email <> '' AND lower(m.email) = @email)
			OR (@url <> '' AND (m.profile->>'profile_url' = @url OR m.profile->>'url' = @url)))`, args)
	if err != nil {
		return Erasure{}, err
	}
	args["members"] = members

	// 2. The rows that name the person, then those of the profiles and emails found for them.
	match := `SELECT r.id FROM job_rows r JOIN jobs j ON j.id = r.job_id
		LEFT JOIN profile_results p ON p.row_id = r.id
		LEFT JOIN email_results e ON e.row_id = r.id
		WHERE j.tenant = @tenant AND (
			(@email <> '' AND (r.email = @email OR lower(e.email) = @email))
			OR (@url <> '' AND (r.profile_url = @url OR r.found_profile_url = @url OR p.profile_url = @url))
			OR (@company <> '' AND ((` + nameNorm("r.name") + ` = @name AND ` + nameNorm("r.company") + ` = @company)
				OR (` + nameNorm("p.name") + ` = @name AND ` + nameNorm("p.company") + ` = @company)))
			OR (@domain <> '' AND ` + nameNorm("r.name") + ` = @name AND r.domain = @domain)
			OR r.platform_member = ANY(@members::uuid[]))`
	ids, err := collect[int64](ctx, tx, match, args)
	if err != nil {
		return Erasure{}, err
	}
	// Hold the rows: a worker's save of one of them either committed before
	// (what it wrote is read and removed below) or waits for this erasure and
	// then finds the row gone (and writes nothing, cache included).
	if err := lockRows(ctx, tx, ids); err != nil {
		return Erasure{}, err
	}
	urls, err := collect[string](ctx, tx, `SELECT DISTINCT u FROM job_rows r
		LEFT JOIN profile_results p ON p.row_id = r.id,
		LATERAL (VALUES (r.found_profile_url), (p.profile_url)) AS x(u)
		WHERE r.id = ANY(@ids) AND u IS NOT NULL`, pgx.NamedArgs{"ids": ids})
	if err != nil {
		return Erasure{}, err
	}
	emails, err := collect[string](ctx, tx, `SELECT DISTINCT lower(e.email) FROM email_results e WHERE e.row_id = ANY(@ids)`,
		pgx.NamedArgs{"ids": ids})
	if err != nil {
		return Erasure{}, err
	}
	more, err := collect[int64](ctx, tx, `SELECT r.id FROM job_rows r JOIN jobs j ON j.id = r.job_id
		LEFT JOIN profile_results p ON p.row_id = r.id
		LEFT JOIN email_results e ON e.row_id = r.id
		WHERE j.tenant = @tenant AND NOT r.id = ANY(@ids) AND (
			r.profile_url = ANY(@urls) OR r.found_profile_url = ANY(@urls) OR p.profile_url = ANY(@urls)
			OR r.email = ANY(@emails) OR lower(e.email) = ANY(@emails))`,
		pgx.NamedArgs{"tenant": req.Tenant, "ids": ids, "urls": urls, "emails": emails})
	if err != nil {
		return Erasure{}, err
	}
	ids = append(ids, more...)
	// Members by an email found for the person (a name alone could be someone else's), and their sync rows.
	found, err := collect[string](ctx, tx, `SELECT id::text FROM platform_members m
		WHERE m.tenant = @tenant AND lower(m.email) = ANY(@emails) AND NOT m.id = ANY(@members::uuid[])`,
		pgx.NamedArgs{"tenant": req.Tenant, "emails": emails, "members": members})
	if err != nil {
		return Erasure{}, err
	}
	if len(found) > 0 {
		members = append(members, found...)
		syncRows, err := collect[int64](ctx, tx, `SELECT r.id FROM job_rows r WHERE r.platform_member = ANY(@members::uuid[]) AND NOT r.id = ANY(@ids)`,
			pgx.NamedArgs{"members": found, "ids": ids})
		if err != nil {
			return Erasure{}, err
		}
		ids = append(ids, syncRows...)
	}

	if err := lockRows(ctx, tx, ids); err != nil {
		return Erasure{}, err
	}

	// 3. What the rows said: the keys to remove from the cache and to suppress.
	rows, err := tx.Query(ctx, `SELECT r.input_kind, coalesce(r.profile_url, ''), coalesce(r.name, ''), coalesce(r.company, ''),
			coalesce(r.domain, ''), coalesce(r.email, ''), coalesce(r.role, ''), coalesce(r.found_profile_url, ''),
			coalesce(p.name, ''), coalesce(p.company, ''), coalesce(e.email, '')
		FROM job_rows r LEFT JOIN profile_results p ON p.row_id = r.id LEFT JOIN email_results e ON e.row_id = r.id
		WHERE r.id = ANY($1)`, ids)
	if err != nil {
		return Erasure{}, interpretError(err)
	}
	var er ErasedRow
	cacheKeys, suppress := map[string]bool{}, map[string]bool{}
	// The person's emails and profile URLs, to find stored uploads that hold them as bytes
	// (a name alone may be a namesake's: stored uploads name people by their hashes too).
	values := map[string]bool{}
	for _, v := range []string{p.Email, p.ProfileURL} {
		if v != "" {
			values[v] = true
		}
	}
	_, err = pgx.ForEachRow(rows, []any{&er.Kind, &er.ProfileURL, &er.Name, &er.Company, &er.Domain, &er.Email, &er.Role,
		&er.FoundProfileURL, &er.FoundName, &er.FoundComp, &er.FoundEmail}, func() error {
		c, sup := req.Keys(er)
		for _, k := range c {
			cacheKeys[k] = true
		}
		for _, k := range sup {
			suppress[k] = true
		}
		for _, v := range []string{er.FoundProfileURL, er.FoundEmail} {
			if v != "" {
				values[v] = true
			}
		}
		if er.Kind != domain.InputNameCompany && er.Kind != domain.InputNameDomain || er.Role == "" {
			for _, v := range []string{er.ProfileURL, er.Email} {
				if v != "" {
					values[v] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return Erasure{}, interpretError(err)
	}
	// The request itself names the person whether or not a row was found.
	c, sup := req.Keys(ErasedRow{Kind: kindOf(identity), ProfileURL: p.ProfileURL, Name: p.Name, Company: p.Company,
		Domain: p.Domain, Email: p.Email})
	for _, k := range c {
		cacheKeys[k] = true
	}
	for _, k := range sup {
		suppress[k] = true
	}

	// 4. The ledger keeps its money; the key derived from the input becomes a keyed hash.
	// A bulk call's line names no row: every closed bulk line of the person's jobs is
	// rewritten (its key digests the inputs of up to a hundred rows, theirs among them).
	ledger, err := tx.Query(ctx, `SELECT l.id, l.idempotency_key FROM credit_ledger l
		WHERE l.idempotency_key NOT LIKE 'erased-%' AND (l.row_id = ANY($1)
			OR (l.row_id IS NULL AND l.status <> 'reserved' AND l.job_id IN (SELECT r.job_id FROM job_rows r WHERE r.id = ANY($1))))
		FOR UPDATE`, ids)
	if err != nil {
		return Erasure{}, interpretError(err)
	}
	var lid int64
	var lkey string
	var lids []int64
	var lkeys []string
	if _, err := pgx.ForEachRow(ledger, []any{&lid, &lkey}, func() error {
		lids = append(lids, lid)
		lkeys = append(lkeys, "erased-"+hex.EncodeToString(req.Hash(lkey))[:40])
		return nil
	}); err != nil {
		return Erasure{}, interpretError(err)
	}
	if n, err := exec(ctx, tx, `UPDATE credit_ledger l SET idempotency_key = u.k, error = ''
		FROM unnest($1::bigint[], $2::text[]) AS u(id, k) WHERE l.id = u.id`, lids, lkeys); err != nil {
		return Erasure{}, err
	} else {
		receipt["credit_ledger (rewritten)"] = n
	}

	// 5. Removals, table by table. Results and markers first, so that each is counted.
	withdrawn, err := tx.Query(ctx, `DELETE FROM results_feed_log WHERE tenant = $1 AND row_id = ANY($2) AND kind <> 'deleted'
		RETURNING seq, job_id::text, row_id, stage, source_seq`, req.Tenant, ids)
	if err != nil {
		return Erasure{}, interpretError(err)
	}
	type line struct {
		seq, row, source int64
		job, stage       string
	}
	var lines []line
	var l line
	if _, err := pgx.ForEachRow(withdrawn, []any{&l.seq, &l.job, &l.row, &l.stage, &l.source}, func() error {
		lines = append(lines, l)
		return nil
	}); err != nil {
		return Erasure{}, interpretError(err)
	}
	receipt["results_feed_log"] = int64(len(lines))
	for _, table := range []string{"profile_results", "email_results", "phone_results", "no_matches"} {
		n, err := exec(ctx, tx, `DELETE FROM `+table+` WHERE row_id = ANY($1)`, ids)
		if err != nil {
			return Erasure{}, err
		}
		receipt[table] = n
	}
	keys := setList(cacheKeys)
	if receipt["lookup_cache"], err = exec(ctx, tx, `DELETE FROM lookup_cache WHERE tenant = $1 AND input_key = ANY($2)`, req.Tenant, keys); err != nil {
		return Erasure{}, err
	}
	if _, err = exec(ctx, tx, `DELETE FROM lookup_claims WHERE tenant = $1 AND input_key = ANY($2)`, req.Tenant, keys); err != nil {
		return Erasure{}, err
	}
	// An input row's extras go with its last row (job_input_extras: one line per input row).
	if receipt["job_input_extras"], err = exec(ctx, tx, `DELETE FROM job_input_extras x
		USING (SELECT DISTINCT job_id, input_row FROM job_rows WHERE id = ANY($1)) d
		WHERE x.job_id = d.job_id AND x.input_row = d.input_row
		  AND NOT EXISTS (SELECT 1 FROM job_rows r WHERE r.job_id = d.job_id AND r.input_row = d.input_row AND NOT r.id = ANY($1))`, ids); err != nil {
		return Erasure{}, err
	}
	if receipt["job_rows"], err = exec(ctx, tx, `DELETE FROM job_rows WHERE id = ANY($1)`, ids); err != nil {
		return Erasure{}, err
	}
	if receipt["platform_members"], err = exec(ctx, tx, `DELETE FROM platform_members WHERE id = ANY($1::uuid[])`, members); err != nil {
		return Erasure{}, err
	}
	// A stored upload is the file as sent: one that holds the person goes whole. It is found
	// by the keyed hashes of the identities its rows name (the suppression list's keys,
	// normalised as rows are: UploadFile.PersonHashes), or by a value of the person as bytes
	// of the file (an extra column; an upload stored without an erasure key). A hash is
	// found at any offset: one straddling two others would need 128 bits to agree by chance.
	var blobs, people [][]byte
	for v := range values {
		blobs = append(blobs, []byte(v))
	}
	for k := range suppress {
		people = append(people, req.Hash(k)[:PersonHashBytes])
	}
	if receipt["uploads"], err = exec(ctx, tx, `DELETE FROM uploads u WHERE u.tenant = $1
		AND (EXISTS (SELECT 1 FROM unnest($3::bytea[]) AS h(b) WHERE position(h.b IN u.person_hashes) > 0)
			OR EXISTS (SELECT 1 FROM unnest($2::bytea[]) AS v(b) WHERE position(v.b IN u.body) > 0))`,
		req.Tenant, blobs, people); err != nil {
		return Erasure{}, err
	}
	// Webhook payloads are made at send time from a job's counts: none holds a person.
	receipt["webhook_deliveries"] = 0

	// 6. A deleted line for each line withdrawn, under the feed's turn (see results_feed_advance):
	// positions handed out in the order they become visible.
	if len(lines) > 0 {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM results_feed_cursor WHERE singleton FOR UPDATE`); err != nil {
			return Erasure{}, interpretError(err)
		}
		seqs, jobs, rws, stages, sources := make([]int64, len(lines)), make([]string, len(lines)), make([]int64, len(lines)),
			make([]string, len(lines)), make([]int64, len(lines))
		for i, l := range lines {
			seqs[i], jobs[i], rws[i], stages[i], sources[i] = l.seq, l.job, l.row, l.stage, l.source
		}
		n, err := exec(ctx, tx, `INSERT INTO results_feed_log (tenant, job_id, row_id, kind, stage, source_seq, deleted_seq)
			SELECT $1, u.job, u.row, 'deleted', u.stage, u.source, u.seq
			FROM unnest($2::bigint[], $3::uuid[], $4::bigint[], $5::text[], $6::bigint[]) AS u(seq, job, row, stage, source)
			ORDER BY u.seq`, req.Tenant, seqs, jobs, rws, stages, sources)
		if err != nil {
			return Erasure{}, err
		}
		receipt["results_feed_log (deleted lines added)"] = n
	}

	// 7. The erasure, its suppression list and its audit line.
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
