-- Usage adjustments on the next invoice (docs/invoicing.md, "Late usage and corrections settle themselves"): more usage
-- in a finalized period is by default a line on the subscription's next invoice; per environment it may be an invoice
-- of its own (what 0875 did). An adjustment waiting for that invoice is `scheduled`; the billing run carries it and marks
-- it issued (document = the invoice carrying it) in the invoice's own transaction. Each adjustment also names what it
-- settles: the corrections and late events, by id (100 at most) and counted.
ALTER TABLE usage_adjustment_settings ADD COLUMN method text NOT NULL DEFAULT 'next_invoice' CHECK (method IN ('next_invoice', 'own_invoice'));

ALTER TABLE usage_adjustments DROP CONSTRAINT usage_adjustments_status_check;
ALTER TABLE usage_adjustments ADD CONSTRAINT usage_adjustments_status_check CHECK (status IN ('pending', 'scheduled', 'issued'));
-- How it is issued: own_invoice (a USAGE_ADJUSTMENT invoice), next_invoice (a line on the subscription's next invoice),
-- credit_note (less usage). Rows of 0875 were all issued on their own documents.
ALTER TABLE usage_adjustments ADD COLUMN method text NOT NULL DEFAULT 'own_invoice' CHECK (method IN ('own_invoice', 'next_invoice', 'credit_note'));
UPDATE usage_adjustments SET method = 'credit_note' WHERE kind = 'credit';
-- The subscription whose next invoice carries it, and the date that invoice is expected by (a scheduled adjustment not
-- carried a day after it is issued on its own invoice instead).
ALTER TABLE usage_adjustments ADD COLUMN subscription_id text;
ALTER TABLE usage_adjustments ADD COLUMN carry_by timestamptz;
-- The percentage rates of the original invoice it was taxed at (the line on the next invoice keeps them).
ALTER TABLE usage_adjustments ADD COLUMN tax_rates jsonb NOT NULL DEFAULT '[]';
ALTER TABLE usage_adjustments ADD COLUMN correction_ids text[] NOT NULL DEFAULT '{}';
ALTER TABLE usage_adjustments ADD COLUMN corrections integer NOT NULL DEFAULT 0;
ALTER TABLE usage_adjustments ADD COLUMN late_event_ids text[] NOT NULL DEFAULT '{}';
ALTER TABLE usage_adjustments ADD COLUMN late_events integer NOT NULL DEFAULT 0;

CREATE INDEX usage_adjustments_scheduled ON usage_adjustments (subscription_id) WHERE status = 'scheduled';
CREATE INDEX usage_adjustments_document ON usage_adjustments (document_id) WHERE document_id IS NOT NULL;
