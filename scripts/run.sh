#!/usr/bin/env bash
# `make run`: capture this machine's agent history and search it; with no agent history,
# capture the demo corpus instead (into its own home, so a real home never holds demo data).
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTLOG=.venv/bin/agentlog
QUERY="${AGENTLOG_RUN_QUERY:-error}"

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
  echo "More: agentlog search <words> · agentlog capture --watch · agentlog restore --to DIR"
else
  DEMO_HOME="${AGENTLOG_DEMO_HOME:-${TMPDIR:-/tmp}/agentlog-demo}"
  echo "== no Claude Code, Codex or opencode history here: running the demo in $DEMO_HOME"
  "$AGENTLOG" --home "$DEMO_HOME" demo
  echo
  echo "More: agentlog --home $DEMO_HOME search <words> · agentlog --home $DEMO_HOME audit"
fi
