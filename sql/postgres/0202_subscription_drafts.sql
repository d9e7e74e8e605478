-- Draft subscriptions: created with subscription_status draft, they bill nothing and grant nothing
-- until activated.
ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_subscription_status_check;
ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_subscription_status_check
  CHECK (subscription_status IN ('draft', 'not_started', 'trialing', 'active', 'incomplete', 'cancelled'));
