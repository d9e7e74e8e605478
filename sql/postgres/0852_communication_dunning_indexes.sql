-- What the communications and dunning jobs look for every few minutes, found without reading every invoice, credit
-- note and payment: the recently finalized or succeeded ones, and the finalized invoices still owing outside dunning.
CREATE INDEX invoices_finalized_at ON invoices (finalized_at) WHERE invoice_status = 'FINALIZED';
CREATE INDEX credit_notes_finalized_at ON credit_notes (finalized_at) WHERE credit_note_status = 'FINALIZED';
CREATE INDEX payments_succeeded_at ON payments (succeeded_at) WHERE payment_status = 'SUCCEEDED';
CREATE INDEX invoices_dunning_entry ON invoices (due_date) WHERE dunning_status IS NULL AND invoice_status = 'FINALIZED';
