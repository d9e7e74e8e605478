-- Endpoint signing secrets are sealed at rest from here on, which 0500's "kept as written" no longer says:
-- AES-256-GCM under SECRETS_ENCRYPTION_KEY with the endpoint id as associated data (infra/secrets.ts).
-- The columns stay text: a sealed value is `v1:<iv>:<tag>:<ciphertext>`. SQL cannot seal the rows written
-- before (the key is not in the database): they hold `whsec_…` until the webhook-delivery job seals them,
-- and are read as they are meanwhile (api/webhooks/service.ts openSecret).
COMMENT ON COLUMN webhook_endpoints.secret IS 'v1:… sealed by infra/secrets.ts (endpoint id as associated data); whsec_… in rows from before 0501 until the webhook-delivery job seals them';
COMMENT ON COLUMN webhook_endpoints.previous_secret IS 'sealed as secret is, with the same endpoint id';
