-- Who manages which keys: a tenant's owner key manages the keys of every environment of the tenant; any
-- other admin key only those of its own environment. The key a tenant is created with (printed once at
-- the first start, or by `meterbill tenant create`) is its owner key; keys minted over the API never are.
ALTER TABLE api_keys ADD COLUMN tenant_owner boolean NOT NULL DEFAULT false;
UPDATE api_keys SET tenant_owner = true WHERE created_by = 'system' AND name = 'bootstrap admin';
