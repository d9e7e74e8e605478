-- Pricing simulations (POST /v1/pricing/simulations): a candidate price list billed over stored usage, next to
-- what the current prices bill. One row per simulation (its request, status, progress and totals) and one row per
-- subscription simulated (its customer's amounts by price); a customer's result adds up its subscriptions' rows.
CREATE TABLE pricing_simulations (
  id             text PRIMARY KEY,
  tenant_id      text NOT NULL,
  environment_id text NOT NULL,
  name           text NOT NULL,
  start_time     timestamptz NOT NULL,
  end_time       timestamptz NOT NULL,
  customer_ids   text[],
  candidate      jsonb NOT NULL,
  currency       text NOT NULL,
  sim_status     text NOT NULL DEFAULT 'pending' CHECK (sim_status IN ('pending', 'running', 'completed', 'failed')),
  processed      integer NOT NULL DEFAULT 0,
  total          integer,
  totals         jsonb,
  distribution   jsonb,
  error          text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  created_by     text,
  started_at     timestamptz,
  finished_at    timestamptz,
  -- A running simulation's last sign of life: one left running by a stopped process is started again.
  heartbeat_at   timestamptz
);
CREATE INDEX pricing_simulations_scope ON pricing_simulations (tenant_id, environment_id, created_at);
CREATE INDEX pricing_simulations_open ON pricing_simulations (sim_status) WHERE sim_status IN ('pending', 'running');

CREATE TABLE pricing_simulation_results (
  simulation_id   text NOT NULL REFERENCES pricing_simulations(id) ON DELETE CASCADE,
  subscription_id text NOT NULL,
  customer_id     text NOT NULL,
  current         numeric NOT NULL,
  candidate       numeric NOT NULL,
  invoices        integer NOT NULL,
  -- [{price_id, current, candidate}], decimals as strings.
  lines           jsonb NOT NULL,
  PRIMARY KEY (simulation_id, subscription_id)
);
CREATE INDEX pricing_simulation_results_customer ON pricing_simulation_results (simulation_id, customer_id);
