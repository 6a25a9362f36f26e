# shellcheck shell=bash
# The PostgreSQL majors this project builds and tests against, by pg_config. Source it.
#   15: Debian 12's packages (postgresql-15, postgresql-server-dev-15).
#   17, 18: not packaged for Debian 12; scripts/setup.sh builds them from Debian's source
#       packages (scripts/pgsource.sh) into Debian's layout, /usr/lib/postgresql/NN.
#   19: not packaged for Debian 12 either; from Debian's binary packages (below).
#   15.18: the server pg_upgrade starts from in tests/cluster/pg_upgrade_majors.sh, built
#       from Debian 12's source package of that release into a prefix of its own. Debian 12's
#       15.20 stores an attribute option (pg_attver) that 17.11 and 18.6 refuse to restore.
# Not /usr/bin/pg_config: Debian's wrapper answers for the newest major in /usr/lib/postgresql.
PG15_CONFIG=/usr/lib/postgresql/15/bin/pg_config
PG17_CONFIG=/usr/lib/postgresql/17/bin/pg_config
PG18_CONFIG=/usr/lib/postgresql/18/bin/pg_config
PG15_OLD_CONFIG=/opt/snowflake_id/postgresql-15.18/bin/pg_config
PG19_CONFIG=/usr/lib/postgresql/19/bin/pg_config
PG_CONFIGS=("$PG15_CONFIG" "$PG17_CONFIG" "$PG18_CONFIG" "$PG19_CONFIG")
# Debian source package, suite and version of each build (scripts/pgsource.sh). trixie's
# index names postgresql-17 17.12, whose files its pool does not hold; 17.11's it does.
PG17_SOURCE=(postgresql-17 trixie 17.11-0+deb13u1 /usr/lib/postgresql/17)
PG18_SOURCE=(postgresql-18 sid 18.6-3 /usr/lib/postgresql/18)
PG15_OLD_SOURCE=(postgresql-15 bookworm 15.18-0+deb12u1 /opt/snowflake_id/postgresql-15.18)
# 19: the archive's index names postgresql-19 19~beta2-1 and 19~rc1-1 in experimental, but
# its pool holds neither source package, only the 19~rc1-1 binary packages, built for a newer
# Debian (glibc 2.43): scripts/pgbinary.sh installs them into Debian's layout with their
# runtime libraries beside them.
PG19_BINARY=(postgresql-19 experimental 19~rc1-1 sid)

pg_major_of() {
    "$1" --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/'
}

# test_majors FILE: the majors a cluster test's "# majors:" line names ("15 19", or
# "across"), without the reason in parentheses after them (which may name other majors);
# nothing for a test of every major.
test_majors() {
    sed -n 's/^# majors: \([a-z0-9 ]*\).*/\1/p' "$1" | xargs
}
