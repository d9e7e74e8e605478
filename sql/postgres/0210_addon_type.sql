-- An addon's type, as Flexprice names it: onetime (once per subscription, quantity 1) or multiple_instance
-- (any quantity, more than once). Addons made before had no limit, which is multiple_instance.
ALTER TABLE addons ADD COLUMN type text NOT NULL DEFAULT 'multiple_instance' CHECK (type IN ('onetime', 'multiple_instance'));
