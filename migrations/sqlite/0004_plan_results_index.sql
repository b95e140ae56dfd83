-- Every turn asks what became of the channel's recent image plans (context.rs): look them up by
-- channel instead of reading every plan.
CREATE INDEX image_plans_channel ON image_plans (channel_id, created_at);
