package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// VendorPrice is what the vendor behind a key charges for one class of
// answer (enrich.PriceClass, by its name), as its fresh answers showed.
type VendorPrice struct {
	Class   string `json:"class"`
	Credits int64  `json:"credits"` // the price now: the last one shown
	Highest int64  `json:"highest"` // the most ever charged for the class
	Answers int64  `json:"answers"` // fresh answers that agree with Credits
	// Previous is the price before the last change, nil if it never changed.
	Previous    *int64     `json:"previous,omitempty"`
	ChangedAt   *time.Time `json:"changed_at,omitempty"`
	LearnedAt   time.Time  `json:"learned_at"`
	SeenAt      time.Time  `json:"seen_at"`
	LearnedFrom *int64     `json:"learned_from,omitempty"` // the ledger id of the answer that showed Credits
}

// VendorPrices is the learned price list of account (a vendor key's id),
// by class.
func (s *Store) VendorPrices(ctx context.Context, account string) ([]VendorPrice, error) {
	if account == "" {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT class, credits, highest, answers, previous, changed_at, learned_at, seen_at, learned_from
		FROM vendor_prices WHERE account = $1 ORDER BY class`, account)
	if err != nil {
		return nil, interpretError(err)
	}
	var out []VendorPrice
	var p VendorPrice
	_, err = pgx.ForEachRow(rows, []any{&p.Class, &p.Credits, &p.Highest, &p.Answers, &p.Previous, &p.ChangedAt, &p.LearnedAt, &p.SeenAt, &p.LearnedFrom}, func() error {
		out = append(out, p)
		p = VendorPrice{}
		return nil
	})
	return out, interpretError(err)
}

// PriceLearned is what LearnPrice changed.
type PriceLearned struct {
	New     bool  // the class had no price before
	Changed bool  // the class had another price: Previous
	Prev    int64 // the price before, when Changed
}

// LearnPrice records that a fresh answer of class (ledger call by) was
// charged credits by the vendor behind account: a new class, a new price
// (the old one kept as previous), or one more answer agreeing.
func (s *Store) LearnPrice(ctx context.Context, account, class string, credits, by int64) (PriceLearned, error) {
	var l PriceLearned
	if account == "" {
		return l, nil
	}
	err := s.retry(ctx, true, func() error {
		return s.inTx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO vendor_accounts (account) VALUES ($1) ON CONFLICT DO NOTHING`, account); err != nil {
				return err
			}
			var before *int64
			err := tx.QueryRow(ctx, `SELECT credits FROM vendor_prices WHERE account = $1 AND class = $2 FOR UPDATE`, account, class).Scan(&before)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			l = PriceLearned{}
			switch {
			case before == nil:
				l.New = true
				_, err = tx.Exec(ctx, `INSERT INTO vendor_prices (account, class, credits, highest, learned_from) VALUES ($1, $2, $3, $3, $4)
					ON CONFLICT (account, class) DO UPDATE SET answers = vendor_prices.answers + 1, seen_at = now()
					WHERE vendor_prices.credits = excluded.credits`, account, class, credits, by)
			case *before != credits:
				l.Changed, l.Prev = true, *before
				_, err = tx.Exec(ctx, `UPDATE vendor_prices SET previous = credits, credits = $3, highest = greatest(highest, $3), answers = 1,
					changed_at = now(), seen_at = now(), learned_from = $4 WHERE account = $1 AND class = $2`, account, class, credits, by)
			default:
				_, err = tx.Exec(ctx, `UPDATE vendor_prices SET answers = answers + 1, seen_at = now() WHERE account = $1 AND class = $2`, account, class)
			}
			return err
		})
	})
	return l, interpretError(err)
}

// PriceAgreement is a count of fresh answers of one class that showed the
// price known for it.
type PriceAgreement struct {
	Class   string
	Credits int64
	Answers int64
}

// AgreePrices adds answers that agreed with the known prices, in one
// statement. An agreement with a price that has changed since is dropped:
// the newer price stands.
func (s *Store) AgreePrices(ctx context.Context, account string, agreed []PriceAgreement) error {
	if account == "" || len(agreed) == 0 {
		return nil
	}
	classes := make([]string, len(agreed))
	credits := make([]int64, len(agreed))
	answers := make([]int64, len(agreed))
	for i, a := range agreed {
		classes[i], credits[i], answers[i] = a.Class, a.Credits, a.Answers
	}
	err := s.retry(ctx, true, func() error {
		_, err := s.pool.Exec(ctx, `UPDATE vendor_prices p SET answers = p.answers + a.n, seen_at = now()
			FROM (SELECT * FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS a(class, credits, n) ORDER BY class) a
			WHERE p.account = $1 AND p.class = a.class AND p.credits = a.credits`, account, classes, credits, answers)
		return err
	})
	return interpretError(err)
}
