package store

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/enrichq/enrichq/internal/domain"
)

// normText is normName of internal/jobs: lower case, spaces collapsed.
func normText(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// nameNorm is normText of internal/jobs in SQL: lower case, spaces collapsed.
func nameNorm(col string) string {
	return `lower(regexp_replace(btrim(coalesce(` + col + `, '')), '\s+', ' ', 'g'))`
}

// lockRows locks rows of job_rows (in id order) until the transaction ends.
func lockRows(ctx context.Context, tx pgx.Tx, ids []int64) error {
	_, err := tx.Exec(ctx, `SELECT 1 FROM job_rows WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
	return interpretError(err)
}

// kindOf is the input kind an erasure's identity would be uploaded as.
func kindOf(identity string) domain.InputKind {
	switch identity {
	case "email":
		return domain.InputEmail
	case "profile_url":
		return domain.InputProfileURL
	case "name_domain":
		return domain.InputNameDomain
	}
	return domain.InputNameCompany
}

func setList(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// findPerson finds the person's rows and platform members, and locks the
// rows: those that name the person (namedRows), then those of the profiles
// and emails found for them (rowsOfFound).
func findPerson(ctx context.Context, tx pgx.Tx, req EraseRequest) (ids []int64, members []string, err error) {
	ids, members, err = namedRows(ctx, tx, req)
	if err != nil {
		return nil, nil, err
	}
	if ids, members, err = rowsOfFound(ctx, tx, req.Tenant, ids, members); err != nil {
		return nil, nil, err
	}
	if err := lockRows(ctx, tx, ids); err != nil {
		return nil, nil, err
	}
	return ids, members, nil
}

// namedRows returns the platform members of the person (by email or profile
// URL) and the rows that name the person, their sync rows among them, locked.
func namedRows(ctx context.Context, tx pgx.Tx, req EraseRequest) (ids []int64, members []string, err error) {
	p := req.Person
	args := pgx.NamedArgs{"tenant": req.Tenant, "email": p.Email, "url": p.ProfileURL,
		"name": normText(p.Name), "company": normText(p.Company), "domain": p.Domain}
	members, err = collect[string](ctx, tx, namedMembersSQL, args)
	if err != nil {
		return nil, nil, err
	}
	args["members"] = members
	if ids, err = collect[int64](ctx, tx, namedRowsSQL, args); err != nil {
		return nil, nil, err
	}
	// Hold the rows: a worker's save of one of them either committed before
	// (what it wrote is read and removed below) or waits for this erasure and
	// then finds the row gone (and writes nothing, cache included).
	if err := lockRows(ctx, tx, ids); err != nil {
		return nil, nil, err
	}
	return ids, members, nil
}

// namedMembersSQL finds the tenant's platform members of the person's
// email or profile URL, each way through an index that starts at the
// tenant and the value (migrations/00010_feed_seek.sql).
var namedMembersSQL = `SELECT m.id::text FROM platform_members m
		WHERE @email <> '' AND m.tenant = @tenant AND lower(m.email) = @email AND m.email <> ''
	UNION SELECT m.id::text FROM platform_members m
		WHERE @url <> '' AND m.tenant = @tenant AND m.profile->>'profile_url' = @url AND m.profile->>'profile_url' IS NOT NULL
	UNION SELECT m.id::text FROM platform_members m
		WHERE @url <> '' AND m.tenant = @tenant AND m.profile->>'url' = @url AND m.profile->>'url' IS NOT NULL`

// membersOfEmailsSQL finds the tenant's other platform members of the
// emails found, through the index of namedMembersSQL's emails.
var membersOfEmailsSQL = `SELECT id::text FROM platform_members m
		WHERE m.tenant = @tenant AND lower(m.email) = ANY(@emails::text[]) AND m.email <> '' AND NOT m.id = ANY(@members::uuid[])`

// namedRowsSQL finds the rows that name the person, each way through an
// index that starts at the person's value (migrations/00005_seek.sql): the
// row's input, the profile and email found for it, the platform member. A
// row's found_profile_url is its input URL or its profile result's URL
// (internal/jobs sets it with the profile it saves): both are looked up.
// The tenant is checked on the rows found, by their primary key.
var namedRowsSQL = `WITH found AS MATERIALIZED (
		SELECT r.id FROM job_rows r WHERE @email <> '' AND r.email = @email AND r.email IS NOT NULL
		UNION SELECT e.row_id FROM email_results e WHERE @email <> '' AND lower(e.email) = @email
		UNION SELECT r.id FROM job_rows r WHERE @url <> '' AND r.profile_url = @url AND r.profile_url IS NOT NULL
		UNION SELECT p.row_id FROM profile_results p WHERE @url <> '' AND p.profile_url = @url
		UNION SELECT r.id FROM job_rows r WHERE @name <> '' AND @company <> '' AND r.name IS NOT NULL AND r.company IS NOT NULL
			AND ` + nameNorm("r.name") + ` = @name AND ` + nameNorm("r.company") + ` = @company
		UNION SELECT p.row_id FROM profile_results p WHERE @name <> '' AND @company <> '' AND p.name IS NOT NULL AND p.company IS NOT NULL
			AND ` + nameNorm("p.name") + ` = @name AND ` + nameNorm("p.company") + ` = @company
		UNION SELECT r.id FROM job_rows r WHERE @name <> '' AND @domain <> '' AND r.name IS NOT NULL AND r.domain IS NOT NULL
			AND ` + nameNorm("r.name") + ` = @name AND r.domain = @domain
		UNION SELECT r.id FROM job_rows r WHERE r.platform_member = ANY(@members::uuid[]))
	SELECT r.id FROM job_rows r JOIN jobs j ON j.id = r.job_id
	WHERE r.id = ANY(ARRAY(SELECT id FROM found)) AND j.tenant = @tenant`

// rowsOfFound adds to ids the tenant's rows of the profile URLs and emails
// found for them, and to members those of an email found for the person (a
// name alone could be someone else's) with their sync rows.
func rowsOfFound(ctx context.Context, tx pgx.Tx, tenant string, ids []int64, members []string) ([]int64, []string, error) {
	urls, err := collect[string](ctx, tx, `SELECT DISTINCT u FROM job_rows r
		LEFT JOIN profile_results p ON p.row_id = r.id,
		LATERAL (VALUES (r.found_profile_url), (p.profile_url)) AS x(u)
		WHERE r.id = ANY(@ids) AND u IS NOT NULL`, pgx.NamedArgs{"ids": ids})
	if err != nil {
		return nil, nil, err
	}
	emails, err := collect[string](ctx, tx, `SELECT DISTINCT lower(e.email) FROM email_results e WHERE e.row_id = ANY(@ids)`,
		pgx.NamedArgs{"ids": ids})
	if err != nil {
		return nil, nil, err
	}
	more, err := collect[int64](ctx, tx, rowsOfFoundSQL, pgx.NamedArgs{"tenant": tenant, "ids": ids, "urls": urls, "emails": emails})
	if err != nil {
		return nil, nil, err
	}
	ids = append(ids, more...)
	found, err := collect[string](ctx, tx, membersOfEmailsSQL,
		pgx.NamedArgs{"tenant": tenant, "emails": emails, "members": members})
	if err != nil {
		return nil, nil, err
	}
	if len(found) > 0 {
		members = append(members, found...)
		syncRows, err := collect[int64](ctx, tx, `SELECT r.id FROM job_rows r WHERE r.platform_member = ANY(@members::uuid[]) AND NOT r.id = ANY(@ids)`,
			pgx.NamedArgs{"members": found, "ids": ids})
		if err != nil {
			return nil, nil, err
		}
		ids = append(ids, syncRows...)
	}
	return ids, members, nil
}

// rowsOfFoundSQL finds the tenant's other rows of the profile URLs and
// emails found, through the same indexes as namedRowsSQL: a probe per value,
// in a LATERAL subquery that OFFSET 0 keeps from being flattened into a join.
// As one "= ANY(array)" each, a person of hundreds of rows (an email a
// vendor gives many rows) was costed, without fresh statistics, at more than
// the table, and job_rows and profile_results were read whole.
var rowsOfFoundSQL = `WITH found AS MATERIALIZED (
		SELECT f.id FROM unnest(@urls::text[]) AS u(v) CROSS JOIN LATERAL (
			SELECT r.id FROM job_rows r WHERE r.profile_url = u.v AND r.profile_url IS NOT NULL
			UNION SELECT p.row_id FROM profile_results p WHERE p.profile_url = u.v
			OFFSET 0) f
		UNION SELECT f.id FROM unnest(@emails::text[]) AS u(v) CROSS JOIN LATERAL (
			SELECT r.id FROM job_rows r WHERE r.email = u.v AND r.email IS NOT NULL
			UNION SELECT e.row_id FROM email_results e WHERE lower(e.email) = u.v
			OFFSET 0) f)
	SELECT r.id FROM job_rows r JOIN jobs j ON j.id = r.job_id
	WHERE r.id = ANY(ARRAY(SELECT id FROM found)) AND NOT r.id = ANY(@ids::bigint[]) AND j.tenant = @tenant`

// personKeys are what the person's rows and the request said of the person.
type personKeys struct {
	// cache is the lookup_cache keys to remove; suppress what later uploads
	// are checked against (EraseRequest.Keys).
	cache, suppress map[string]bool
	// values are the person's emails and profile URLs, to find stored uploads
	// that hold them as bytes (a name alone may be a namesake's: stored
	// uploads name people by their hashes too).
	values map[string]bool
}

// readPersonKeys reads what the rows ids said of the person, and what the
// request itself says (it names the person whether or not a row was found).
func readPersonKeys(ctx context.Context, tx pgx.Tx, req EraseRequest, identity string, ids []int64) (personKeys, error) {
	p := req.Person
	k := personKeys{cache: map[string]bool{}, suppress: map[string]bool{}, values: map[string]bool{}}
	for _, v := range []string{p.Email, p.ProfileURL} {
		if v != "" {
			k.values[v] = true
		}
	}
	rows, err := tx.Query(ctx, `SELECT r.input_kind, coalesce(r.profile_url, ''), coalesce(r.name, ''), coalesce(r.company, ''),
			coalesce(r.domain, ''), coalesce(r.email, ''), coalesce(r.role, ''), coalesce(r.found_profile_url, ''),
			coalesce(p.name, ''), coalesce(p.company, ''), coalesce(e.email, '')
		FROM job_rows r LEFT JOIN profile_results p ON p.row_id = r.id LEFT JOIN email_results e ON e.row_id = r.id
		WHERE r.id = ANY($1)`, ids)
	if err != nil {
		return personKeys{}, interpretError(err)
	}
	var er ErasedRow
	_, err = pgx.ForEachRow(rows, []any{&er.Kind, &er.ProfileURL, &er.Name, &er.Company, &er.Domain, &er.Email, &er.Role,
		&er.FoundProfileURL, &er.FoundName, &er.FoundComp, &er.FoundEmail}, func() error {
		k.add(req.Keys(er))
		for _, v := range []string{er.FoundProfileURL, er.FoundEmail} {
			if v != "" {
				k.values[v] = true
			}
		}
		if er.Kind != domain.InputNameCompany && er.Kind != domain.InputNameDomain || er.Role == "" {
			for _, v := range []string{er.ProfileURL, er.Email} {
				if v != "" {
					k.values[v] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return personKeys{}, interpretError(err)
	}
	k.add(req.Keys(ErasedRow{Kind: kindOf(identity), ProfileURL: p.ProfileURL, Name: p.Name, Company: p.Company,
		Domain: p.Domain, Email: p.Email}))
	return k, nil
}

// add takes the keys of one row (EraseRequest.Keys).
func (k personKeys) add(cache, suppress []string) {
	for _, c := range cache {
		k.cache[c] = true
	}
	for _, s := range suppress {
		k.suppress[s] = true
	}
}
