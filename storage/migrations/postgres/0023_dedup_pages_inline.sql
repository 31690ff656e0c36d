-- A run page (504 pairs, 8,064 bytes) is kept in its heap row rather than
-- moved to TOAST: the appends' "maybe" page reads were the busiest statement
-- on PostgreSQL at 20M ids, each a heap fetch plus a TOAST index lookup and
-- four chunk fetches. PostgreSQL moves values out of line only while a row is
-- longer than toast_tuple_target; at its maximum (8,160) a page row (8,108
-- bytes) stays inline. Pages written before keep their TOAST chunks.
ALTER TABLE dedup_pages SET (toast_tuple_target = 8160);
