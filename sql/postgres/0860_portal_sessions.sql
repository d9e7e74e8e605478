-- Customer portal sessions: a short-lived credential that reads one customer's billing, handed to that customer
-- (GET /v1/customers/portal/{external_id}). Like an API key, only the SHA-256 of the token is stored; a session is
-- refused once expired, revoked, or its customer deleted.
CREATE TABLE portal_sessions (
  id             text PRIMARY KEY,
  tenant_id      text NOT NULL,
  environment_id text NOT NULL,
  customer_id    text NOT NULL REFERENCES customers(id),
  -- SHA-256 of the token: the token carries 256 random bits, so a slow hash adds nothing.
  token_hash     bytea NOT NULL UNIQUE,
  expires_at     timestamptz NOT NULL,
  revoked_at     timestamptz,
  last_used_at   timestamptz,
  created_at     timestamptz NOT NULL DEFAULT now(),
  -- The API key that opened it.
  created_by     text
);
CREATE INDEX portal_sessions_customer ON portal_sessions (tenant_id, environment_id, customer_id) WHERE revoked_at IS NULL;
