-- Generating gdids: counters per (scope, sequence), blocks, era roll-over, errors.
SHOW gdid.authority;

-- Counters start at 1 (the all-zero gdid is never generated) and carry the authority.
SELECT gdid_next('billing', 'invoices'), gdid_next('billing', 'invoices'),
       gdid_next('billing', 'orders'), gdid_next('shipping', 'invoices');
SELECT * FROM gdid_next_block('billing', 'invoices', 4);
SELECT gdid_next('billing', 'invoices');

-- The intended use: a primary key.
CREATE TABLE invoices (id gdid PRIMARY KEY DEFAULT gdid_next('billing', 'invoices'), item text);
INSERT INTO invoices (item) SELECT 'item ' || g FROM generate_series(1, 5000) g;
SELECT count(*), count(DISTINCT id), bool_and(gdid_authority(id) = 6) AS authority,
       bool_and(gdid_counter(id) > 7) AS after_earlier_calls
  FROM invoices;
SELECT bool_and(id > prev) AS increasing
  FROM (SELECT id, lag(id) OVER (ORDER BY ctid) AS prev FROM invoices) s WHERE prev IS NOT NULL;

-- The authority is a superuser setting and may differ per session on one server: counters
-- are shared, so the gdids stay unique.
SET gdid.authority = 9;
SELECT gdid_authority(gdid_next('billing', 'invoices'));
RESET gdid.authority;
CREATE ROLE gdid_user;
SET ROLE gdid_user;
SET gdid.authority = 3;
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_advance('billing', 'invoices', gdid(0, 0, 1000000));
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- When a counter would pass 2^60 - 1 the era advances. gdid_advance (superuser) moves a
-- sequence on, e.g. above gdids imported from another system; it never moves one back.
SELECT gdid_advance('billing', 'eras', gdid(0, 0, 1152921504606846973));
SELECT * FROM gdid_next_block('billing', 'eras', 2);
SELECT gdid_next('billing', 'eras');
SELECT * FROM gdid_next_block('billing', 'eras', 3);
SELECT gdid_advance('billing', 'eras', gdid(0, 0, 5));
SELECT gdid_next('billing', 'eras');
SELECT gdid_advance('billing', 'eras', gdid(7, 0, 41));
SELECT gdid_next('billing', 'eras');
-- After the last counter of the last era there is nothing left.
SELECT gdid_advance('billing', 'eras', gdid(4294967295, 0, 1152921504606846975));
SELECT gdid_next('billing', 'eras');
\echo :LAST_ERROR_SQLSTATE

-- Bad arguments.
SELECT * FROM gdid_next_block('billing', 'invoices', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_next('', 'invoices');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_next('billing', '');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_next('billing', repeat('x', 64));
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_next(NULL, 'invoices') IS NULL AS strict;

-- Generators write WAL: like nextval they refuse in a read-only transaction (and on a
-- hot standby, where every transaction is read-only), whether or not the lease needs it.
BEGIN READ ONLY;
SELECT gdid_next('billing', 'invoices');
ROLLBACK;
BEGIN READ ONLY;
SELECT snowflake_next('orders');
ROLLBACK;
BEGIN READ ONLY;
SELECT * FROM snowflake_next_batch('orders', 2);
ROLLBACK;
BEGIN READ ONLY;
SELECT * FROM gdid_next_block('billing', 'invoices', 2);
ROLLBACK;
DROP ROLE gdid_user;

-- Monitoring: each sequence's era, last counter and durable lease (counters at or past
-- lease_end were never handed out; a restart resumes there).
SELECT scope, sequence, era, last_counter, lease_end > last_counter AS leased, issued,
       lease_extensions > 0 AS extended
  FROM gdid_sequences ORDER BY scope, sequence;
