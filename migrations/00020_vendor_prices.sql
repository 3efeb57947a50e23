-- What the vendor charges, learned from its own answers, per vendor key; and
-- the ledger's marks of prices inferred and charges the balance witness
-- settled.
--
-- vendor_prices: one row per vendor key (vendor_accounts) and price class
-- (enrich.PriceClass: "profile/name_company/no_match", "email/miss"...).
-- credits is the price the vendor's last fresh answer of the class showed
-- (X-Credits-Charged), answers how many fresh answers agree with it,
-- highest the most it has ever charged for the class (a reservation never
-- holds less), previous and changed_at the price before the last change.
-- credit_ledger.replay_class: the call was answered as a replay of an answer
-- of that class (the billed earlier send is priced by the class's learned
-- price, which may come later). credit_ledger.witnessed_at: the vendor's
-- balance readings (X-Credits-Remaining) around the call pinned its charge,
-- and it was settled to them then.

-- +goose Up
CREATE TABLE vendor_prices (
    account      text        NOT NULL REFERENCES vendor_accounts (account) ON DELETE CASCADE,
    class        text        NOT NULL CHECK (class <> ''),
    credits      bigint      NOT NULL CHECK (credits >= 0),
    highest      bigint      NOT NULL CHECK (highest >= credits),
    answers      bigint      NOT NULL DEFAULT 1 CHECK (answers >= 1),
    previous     bigint      CHECK (previous >= 0),
    learned_from bigint,                                 -- the ledger id of the answer that showed credits
    learned_at   timestamptz NOT NULL DEFAULT now(),     -- first seen
    changed_at   timestamptz,                            -- when credits last changed
    seen_at      timestamptz NOT NULL DEFAULT now(),     -- the last agreeing answer counted
    PRIMARY KEY (account, class)
);

ALTER TABLE credit_ledger
    ADD COLUMN replay_class text,
    ADD COLUMN witnessed_at timestamptz;

-- enrichq_resettle corrects the charge of a settled call (the balance
-- witness pinned it): the job's and the account's spent move by the
-- difference, the tenant's by the ledger's update trigger. It returns
-- false when the call is not settled.
-- +goose StatementBegin
CREATE FUNCTION enrichq_resettle(p_id bigint, p_charged bigint, p_error text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    l record;
BEGIN
    SELECT c.id, c.job_id, coalesce(c.charged, 0) AS charged, c.account, c.account_month INTO l
    FROM credit_ledger c WHERE c.id = p_id AND c.status = 'settled' FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE credit_ledger c SET charged = p_charged, charge_reported = false, error = p_error, witnessed_at = now()
    WHERE c.id = p_id;
    UPDATE jobs j SET credits_spent = j.credits_spent + p_charged - l.charged, updated_at = now() WHERE j.id = l.job_id;
    IF l.account IS NOT NULL THEN
        UPDATE account_usage a SET spent = a.spent + p_charged - l.charged, updated_at = now()
        WHERE a.account = l.account AND a.month = l.account_month;
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION enrichq_resettle(bigint, bigint, text);
ALTER TABLE credit_ledger DROP COLUMN replay_class, DROP COLUMN witnessed_at;
DROP TABLE vendor_prices;
