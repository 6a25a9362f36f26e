-- A sequence this server meets for the first time continues above the values already stored
-- in the columns whose DEFAULT calls its generator with its names: after a restore into a new
-- database, a template copy or pg_upgrade, nothing is handed out twice (tests/cluster/moves.sh
-- and pg_upgrade.sh show those). Only this server's node (snowflake) or authority (gdid)
-- matters: other servers' values are theirs. Here the stored values are inserted by hand.
SHOW snowflake.node_id;
SHOW gdid.authority;

-- gdid: this server's authority is 6. Keys of other authorities, or of this one in other
-- columns, do not count; the highest key of authority 6 in every era does.
CREATE TABLE lc_imported (id gdid PRIMARY KEY DEFAULT gdid_next('restore', 'imported'), note text);
INSERT INTO lc_imported VALUES (gdid(0, 9, 1000000), 'authority 9'), (gdid(0, 6, 50), 'authority 6'),
                            (gdid(3, 2, 7), 'era 3, authority 2'), (gdid(2, 6, 40), 'era 2, authority 6');
CREATE TABLE lc_elsewhere (id gdid DEFAULT gdid_next('restore', 'other'));
INSERT INTO lc_elsewhere VALUES (gdid(9, 6, 9));
INSERT INTO lc_imported (note) VALUES ('generated');
SELECT * FROM lc_imported ORDER BY id;

-- snowflake: this server's node is 5. An ID of node 5 a few seconds in the future (as a
-- server whose clock ran ahead would have made), and one of node 7 further still.
CREATE TABLE lc_events (id snowflake PRIMARY KEY DEFAULT snowflake_next('restore_events'), note text);
INSERT INTO lc_events VALUES
    (snowflake_from_timestamp(now() + interval '3 s') + 4096 * 5 + 7, 'node 5, 3 s ahead'),
    (snowflake_from_timestamp(now() + interval '8 s') + 4096 * 7, 'node 7, 8 s ahead');
INSERT INTO lc_events (note) VALUES ('generated');
SELECT note, snowflake_node(id) AS node,
       id = (SELECT id FROM lc_events WHERE note = 'node 5, 3 s ahead') + 1 AS right_above_node_5
  FROM lc_events ORDER BY id;
-- A default on a bigint column (not the snowflake domain) counts as well.
CREATE TABLE lc_events_copy (id bigint DEFAULT snowflake_next('restore_events2'));
INSERT INTO lc_events_copy VALUES (snowflake_from_timestamp(now() + interval '2 s') + 4096 * 5);
SELECT snowflake_next('restore_events2') = (SELECT id FROM lc_events_copy) + 1 AS bigint_column;

-- Dropping a sequence (superuser): the name's next use starts a new sequence, seeded the same
-- way, so it continues above the keys stored with it.
SELECT snowflake_drop_sequence('restore_events') AS dropped,
       gdid_drop_sequence('restore', 'imported') AS dropped,
       snowflake_drop_sequence('no such sequence') AS dropped;
SELECT count(*) FROM snowflake_sequences WHERE name = 'restore_events';
INSERT INTO lc_imported (note) VALUES ('after the drop');
INSERT INTO lc_events (note) VALUES ('after the drop');
SELECT note, id FROM lc_imported WHERE note LIKE 'generated%' OR note LIKE 'after%' ORDER BY id;
SELECT (SELECT id FROM lc_events WHERE note = 'after the drop') >
       (SELECT max(id) FROM lc_events WHERE note <> 'after the drop' AND snowflake_node(id) = 5)
       AS above_every_earlier_id_of_node_5;
-- A call site that has resolved its names keeps working when its sequence is dropped between
-- two calls: here the same two PL/pgSQL expressions run three times, each time followed by a
-- drop and a COMMIT (a drop takes effect at commit); every call finds the name's new
-- sequence, which continues above the values stored so far.
CREATE TABLE lc_under (id snowflake DEFAULT snowflake_next('lc_dropped_under'),
                       g gdid DEFAULT gdid_next('restore', 'lc_dropped_under'));
DO $$
DECLARE
    id bigint;
    g gdid;
BEGIN
    FOR i IN 1..3 LOOP
        id := snowflake_next('lc_dropped_under');
        g := gdid_next('restore', 'lc_dropped_under');
        INSERT INTO lc_under VALUES (id, g);
        PERFORM snowflake_drop_sequence('lc_dropped_under'),
                gdid_drop_sequence('restore', 'lc_dropped_under');
        COMMIT;
    END LOOP;
END $$;
SELECT array_agg(g ORDER BY g) AS gdids, count(DISTINCT id) AS distinct_ids,
       array_agg(id ORDER BY g) = array_agg(id ORDER BY id) AS ids_in_order
  FROM lc_under;

-- A drop takes effect when its transaction commits, like DROP SEQUENCE: rolled back, in
-- the transaction or in a subtransaction, it changes nothing; until the commit the sequence
-- goes on working.
SELECT snowflake_next('lc_kept') > 0 AS created;
BEGIN;
SELECT snowflake_drop_sequence('lc_kept');
ROLLBACK;
BEGIN;
SAVEPOINT before_drop;
SELECT snowflake_drop_sequence('lc_kept');
ROLLBACK TO before_drop;
COMMIT;
SELECT count(*) AS still_there FROM snowflake_sequences WHERE name = 'lc_kept';
BEGIN;
SELECT snowflake_drop_sequence('lc_kept');
SELECT snowflake_next('lc_kept') > 0 AS still_generates, count(*) AS still_listed
  FROM snowflake_sequences WHERE name = 'lc_kept';
COMMIT;
SELECT count(*) AS gone FROM snowflake_sequences WHERE name = 'lc_kept';
-- A transaction that dropped a sequence cannot be prepared (the drop lives in this backend).
SELECT snowflake_next('lc_kept') > 0 AS created_again;
BEGIN;
SELECT snowflake_drop_sequence('lc_kept');
PREPARE TRANSACTION 'lc_drop';
SELECT count(*) AS not_dropped FROM snowflake_sequences WHERE name = 'lc_kept';

SELECT snowflake_drop_sequence('');
\echo :LAST_ERROR_SQLSTATE
-- A name too long is quoted up to its first 63 bytes.
SELECT snowflake_drop_sequence(repeat('x', 100000));
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_next('restore', repeat('y', 100000));
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_node(1, repeat('z', 100000));
\echo :LAST_ERROR_SQLSTATE
CREATE ROLE lifecycle_user;
SET ROLE lifecycle_user;
SELECT snowflake_drop_sequence('restore_events');
\echo :LAST_ERROR_SQLSTATE
SELECT gdid_drop_sequence('restore', 'imported');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
DROP ROLE lifecycle_user;
BEGIN READ ONLY;
SELECT snowflake_drop_sequence('restore_events');
ROLLBACK;
DROP TABLE lc_imported, lc_elsewhere, lc_events, lc_events_copy, lc_under;
