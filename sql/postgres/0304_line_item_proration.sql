-- How a line item's start and end inside a billing period are settled: the proration_behavior of the
-- modification that started or ended it. create_prorations: by the next billing point's invoice;
-- always_invoice: on a SUBSCRIPTION_UPDATE invoice made at the change (so never again by the cycle);
-- none: not at all. NULL: as the subscription's own proration_behavior says.
ALTER TABLE subscription_line_items
  ADD COLUMN proration_behavior text CHECK (proration_behavior IN ('create_prorations', 'always_invoice', 'none')),
  ADD COLUMN end_proration_behavior text CHECK (end_proration_behavior IN ('create_prorations', 'always_invoice', 'none'));
