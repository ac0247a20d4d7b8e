#!/bin/sh
# Install Debian's Chromium for the dashboard tests when it is missing (never a downloaded
# browser). A failed install is an error: the browser tests would otherwise not run. Outside
# CI, set AGENTLOG_NO_BROWSER=1 to go on without it (the browser tests then skip, saying why).
set -u
# (and tmux, for the terminal browser's test under a real terminal: tests/test_tui_tmux.py)
missing=""
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || missing=" chromium"
command -v tmux >/dev/null 2>&1 || missing="$missing tmux"
if [ -z "$missing" ]; then
    exit 0
fi
fail() {
    echo "install-browser: $1" >&2
    if [ "${AGENTLOG_NO_BROWSER:-}" = "1" ] && [ "${CI:-}" != "true" ]; then
        echo "install-browser: AGENTLOG_NO_BROWSER=1: going on; the browser tests will skip" >&2
        exit 0
    fi
    echo "install-browser: install Debian's chromium (apt-get install chromium), or set AGENTLOG_NO_BROWSER=1 outside CI to skip the browser tests" >&2
    exit 1
}
SUDO=""
if [ "$(id -u)" != "0" ]; then
    command -v sudo >/dev/null 2>&1 || fail "chromium is missing and this user is not root (no sudo)"
    SUDO="sudo -n"
fi
echo "install-browser: installing Debian's$missing…" >&2
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
# shellcheck disable=SC2086
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null 2>&1 \
    || fail "apt-get install$missing failed"
[ -x /usr/bin/chromium ] || fail "chromium installed but /usr/bin/chromium is missing"
exit 0
