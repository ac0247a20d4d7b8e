#!/bin/sh
# Install Debian's Chromium for the dashboard tests when it is missing (never a downloaded
# browser). Failure is not fatal: the browser tests then skip with the reason.
set -u
if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; else
        echo "install-browser: chromium missing and not root; browser tests will skip" >&2
        exit 0
    fi
fi
echo "install-browser: installing Debian chromium…" >&2
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 \
    || echo "install-browser: apt-get install chromium failed; browser tests will skip" >&2
exit 0
