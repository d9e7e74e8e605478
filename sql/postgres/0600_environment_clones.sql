-- Cloning an environment (POST /v1/environments/{id}/clone) remembers which record of the target each
-- record of the source became, so cloning again updates those records instead of copying them twice, and
-- removes from a cloned plan what was removed from its source. Ids are unique across environments, so a
-- source record maps to one record per target.
CREATE TABLE environment_clone_map (
  tenant_id             text NOT NULL,
  source_environment_id text NOT NULL REFERENCES environments(id),
  target_environment_id text NOT NULL REFERENCES environments(id),
  entity_type           text NOT NULL CHECK (entity_type IN ('meter', 'group', 'feature', 'plan', 'addon', 'price', 'entitlement', 'credit_grant')),
  source_id             text NOT NULL,
  target_id             text NOT NULL,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source_environment_id, target_environment_id, source_id)
);
