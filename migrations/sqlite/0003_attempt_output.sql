-- What an attempt printed or kept (`ctx.output`): redacted, its last 64 KiB.
ALTER TABLE attempts ADD COLUMN output TEXT;
