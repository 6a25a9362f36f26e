-- Soft input errors. On PostgreSQL 16 and later, gdid_in reports bad text to callers that
-- ask for it without raising: pg_input_is_valid, pg_input_error_info, and (17+) COPY with
-- ON_ERROR ignore. PostgreSQL 15 has neither; there the same input is always an ERROR (see
-- gdid_type). This file's expected output for 15 is gdid_soft_1.out.
SELECT current_setting('server_version_num')::int >= 170000 AS soft_errors \gset
\if :soft_errors
SELECT pg_input_is_valid('1293:3:57', 'gdid') AS good,
       pg_input_is_valid('1::3', 'gdid') AS malformed,
       pg_input_is_valid('1:18:3', 'gdid') AS out_of_range;
SELECT * FROM pg_input_error_info('1::3', 'gdid');
SELECT * FROM pg_input_error_info('1:18:3', 'gdid');
CREATE TABLE soft (id gdid);
COPY soft FROM STDIN WITH (ON_ERROR ignore);
1:2:3
1::3
0x00000000100000000000004B
1:18:3
\.
SELECT * FROM soft;
-- Without ON_ERROR the first bad line stops the COPY, as always.
COPY soft FROM STDIN;
7:7:7
-1:0:0
\.
SELECT count(*) FROM soft;
DROP TABLE soft;
\else
\echo 'PostgreSQL 15: no soft input errors'
\endif
