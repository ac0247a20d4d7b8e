#!/usr/bin/env bash
# `make run`: capture this machine's agent history and search it; with no agent history,
# capture the demo corpus instead (into its own home, so a real home never holds demo data).
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTLOG=.venv/bin/agentlog
QUERY="${AGENTLOG_RUN_QUERY:-error}"
BIN="$(pwd)/.venv/bin"
# the name the "More:" lines use: `agentlog` when this one is on PATH, else its full path
if [ "$(command -v agentlog 2>/dev/null)" = "$BIN/agentlog" ]; then
  NAME=agentlog
else
  NAME="$BIN/agentlog"
fi

on_path() {
  # the last line: how to run `agentlog` by name from any folder
  if [ "$NAME" != agentlog ]; then
    echo
    echo "agentlog is installed in $BIN (not on your PATH). To run it by name:"
    echo "  export PATH=\"$BIN:\$PATH\"    # this shell; add the line to ~/.bashrc or ~/.zshrc to keep it"
    echo "  or a user-level install: pipx install $(pwd)   (or: uv tool install $(pwd))"
  fi
}

has_history=0
for d in "${CLAUDE_CONFIG_DIR:-$HOME/.claude}" "${CODEX_HOME:-$HOME/.codex}" \
         "${XDG_DATA_HOME:-$HOME/.local/share}/opencode"; do
  IFS=',' read -ra parts <<< "$d"
  for p in "${parts[@]}"; do
    # a transcript, not just the folder (an empty ~/.claude/projects is no history)
    if [ -d "$p" ] && [ -n "$(find "$p" -type f \( -name '*.jsonl' -o -name '*.db' \
         -o -path '*/storage/*' \) -print -quit 2>/dev/null)" ]; then
      has_history=1
    fi
  done
done

if [ "$has_history" = 1 ]; then
  echo "== agentlog capture (read-only on your agent folders)"
  "$AGENTLOG" capture
  echo
  echo "== agentlog audit"
  "$AGENTLOG" audit
  echo
  echo "== agentlog search $QUERY"
  "$AGENTLOG" search "$QUERY" || true
  echo
  echo "More: $NAME search <words> · $NAME browse · $NAME capture --watch · $NAME restore --to DIR"
  on_path
else
  DEMO_HOME="${AGENTLOG_DEMO_HOME:-${TMPDIR:-/tmp}/agentlog-demo}"
  echo "== no Claude Code, Codex or opencode history here: running the demo in $DEMO_HOME"
  "$AGENTLOG" --home "$DEMO_HOME" demo
  echo
  echo "More: $NAME --home $DEMO_HOME search <words> · $NAME --home $DEMO_HOME browse"
  on_path
fi
