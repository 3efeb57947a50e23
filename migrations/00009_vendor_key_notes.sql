-- +goose Up
-- What a vendor's answers say of its key, beyond the balance the ledger
-- keeps: the balance split into credits bought and overage credits still
-- allowed (enrich.Charge.Overage, where a vendor reports it), since when the
-- key spends into overage, and when an answer last showed the key's plan
-- hiding contact data (enrich.Answer.ContactsHidden). One row per configured
-- vendor (the vendors file's name: one key each), written by the workers,
-- read by GET /v1/vendors.
CREATE TABLE vendor_key_notes (
    vendor              text        PRIMARY KEY CONSTRAINT vendor_key_notes_vendor_check CHECK (vendor <> ''),
    purchased_remaining bigint,      -- NULL: the vendor never said
    overages_remaining  bigint,
    overage_since       timestamptz, -- NULL: not in overage (purchased credits left)
    contacts_hidden_at  timestamptz, -- NULL: no answer showed contact data hidden
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE vendor_key_notes;
