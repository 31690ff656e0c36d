-- Segments are TOASTed (up to 1 MiB each), and PostgreSQL's default pglz
-- spends ~4 ms compressing one; LZ4 does it in a fraction of that at a
-- similar ratio. LZ4 needs PostgreSQL 14+ built with it; a server without
-- it keeps pglz, which only costs speed.
DO $$
BEGIN
    ALTER TABLE segments ALTER COLUMN records SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
    RAISE NOTICE 'segments keep the default compression: %', SQLERRM;
END
$$;
