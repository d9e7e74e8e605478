-- Payments created directly (POST /v1/payments) may carry an idempotency key: a retry with the same key answers the
-- payment it made instead of paying twice. Unique within an environment, as Flexprice's is.
CREATE UNIQUE INDEX payments_idempotency_key ON payments (tenant_id, environment_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
