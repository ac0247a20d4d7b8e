#!/bin/sh
# Install Debian's PostgreSQL server for the team-server tests when initdb is missing (never a
# downloaded build). Tests start their own throwaway cluster (initdb + pg_ctl in a temp dir,
# as the `postgres` system user when run as root); nothing here starts a service.
# Not fatal: without the server the tests skip with the reason (a failure under CI=true).
set -u
for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then exit 0; fi
done
if command -v initdb >/dev/null 2>&1; then exit 0; fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; else
        echo "install-postgres: initdb missing and not root; PostgreSQL tests will skip" >&2
        exit 0
    fi
fi
echo "install-postgres: installing Debian postgresql…" >&2
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
# policy-rc.d 101: do not start the packaged cluster service inside containers/CI
if [ -z "$SUDO" ] && [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null 2>&1 \
    || echo "install-postgres: apt-get install postgresql failed; PostgreSQL tests will skip" >&2
exit 0
