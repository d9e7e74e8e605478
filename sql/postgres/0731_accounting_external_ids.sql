-- QuickBooks' notifications name its records by its own ids: which of our invoices (or of the payments we pushed) a
-- QuickBooks id is, looked up per connection.
CREATE INDEX accounting_syncs_external ON accounting_syncs (connection_id, entity_type, external_id) WHERE external_id IS NOT NULL;
