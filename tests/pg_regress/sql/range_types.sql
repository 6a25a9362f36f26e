-- A range of another type passed off as an int8range, through a binary-coercible cast a
-- superuser made, is refused (42804), not read as one. PostgreSQL 17 and later refuse such a
-- cast between range types themselves (expected/range_types_1.out).
BEGIN;
CREATE TYPE other_range AS RANGE (subtype = float8);
CREATE CAST (other_range AS int8range) WITHOUT FUNCTION;
SELECT snowflake_range_first(other_range(1.5, 2.5)::int8range);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
