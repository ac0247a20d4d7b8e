#!/bin/sh
# Install the agents' own CLIs (pinned) into .clients/ (git-ignored) for
# tests/test_mcp_clients_real.py: each lists the server `agentlog mcp install` registered.
# Only what the npm registry serves whole: Crush's package downloads its binary from GitHub
# in a postinstall step, Goose, Cursor's and Kiro's CLIs are not on npm (docs/mcp.md).
# Idempotent: nothing is done when .clients/ holds these versions. Not fatal: without npm
# the tests skip with the reason (a failure under CI=true).
set -u
cd "$(dirname "$0")/.."
PKGS="@anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0 opencode-ai@1.18.33
@google/gemini-cli@0.61.0 @qwen-code/qwen-code@0.24.4 @github/copilot@1.0.102
@sourcegraph/amp@0.0.1790142911-g7618fb cline@3.0.65"
STAMP=.clients/.installed
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$PKGS" ]; then exit 0; fi
if ! command -v npm >/dev/null 2>&1; then
    echo "install-clients: npm missing; the real-client MCP tests will skip" >&2
    exit 0
fi
echo "install-clients: installing the agents' CLIs into .clients/ (~2 GB, ~2 min)…" >&2
mkdir -p .clients
# shellcheck disable=SC2086  # one word a package
if npm install --prefix .clients --no-audit --no-fund --loglevel=error $PKGS >&2; then
    echo "$PKGS" > "$STAMP"
else
    echo "install-clients: npm install failed; the real-client MCP tests will skip" >&2
fi
exit 0
