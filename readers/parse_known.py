"""The record types each format has, and which of them are deliberately not indexed.

A type listed here is understood: lines of a "quiet" type are skipped and counted in
`ParseResult.skipped`. A type listed nowhere is counted in `ParseResult.unknown`, so a format
change shows up in `audit` instead of disappearing. Adding a type here is a parser change
(bump `readers.version.PARSER_VERSION` when it changes the records a file yields).
"""

from __future__ import annotations

# Claude Code (formats.md §1.4)
# Metadata and UI lines: understood, deliberately not indexed.
CLAUDE_QUIET_TYPES = frozenset(
    {
        "progress",
        "last-prompt",
        "file-history-snapshot",
        "file-history-delta",
        "queue-operation",
        "permission-mode",
        "mode",
        "agent-name",
        "pr-link",
        "teleported-from",
        "fork-context-ref",
        "agent-setting",
        "worktree-state",
        "frame-link",
        "relocated",
        "bridge-session",
    }
)
CLAUDE_TITLE_TYPES = {"ai-title": "aiTitle", "custom-title": "customTitle"}
CLAUDE_QUIET_SYSTEM = frozenset({"turn_duration", "stop_hook_summary", "compact_boundary"})

# Codex CLI (formats.md §2.3)
# User items that start with one of these were injected by Codex, not typed by the user.
CODEX_INJECTED = (
    "<environment_context>",
    "# AGENTS.md instructions",
    "<user_instructions>",
    "<turn_aborted>",
    "<permissions instructions>",
    "<collaboration_mode>",
    "<user_shell_command>",
)
CODEX_RESPONSE_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "tool_search_call",
        "tool_search_output",
        "image_generation_call",
        "ghost_snapshot",
        "agent_message",
    }
)
# UI copies of response items, and UI-only events: understood, deliberately not indexed.
CODEX_QUIET_EVENTS = frozenset(
    {
        "user_message",
        "agent_message",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "agent_reasoning_section_break",
        "token_count",
        "task_started",
        "task_complete",
        "turn_aborted",
        "exec_command_begin",
        "exec_command_end",
        "patch_apply_begin",
        "patch_apply_end",
        "item_started",
        "item_completed",
        "context_compacted",
        "web_search_begin",
        "web_search_end",
        "mcp_tool_call_begin",
        "mcp_tool_call_end",
        "entered_review_mode",
        "exited_review_mode",
        "thread_settings_applied",
        "sub_agent_activity",
        "image_generation_end",
        "thread_goal_updated",
        "collab_agent_spawn_end",
        "collab_waiting_end",
        "collab_close_end",
        "collab_agent_interaction_end",
        "guardian_assessment",
        "view_image_tool_call",
        "dynamic_tool_call_request",
        "dynamic_tool_call_response",
        "undo_completed",
        "turn_diff",
        "plan_update",
        "stream_error",
        "background_event",
        "warning",
        "get_history_entry_response",
        "mcp_list_tools_response",
        "list_custom_prompts_response",
        "shutdown_complete",
        "session_configured",
        "conversation_path",
        "undo_started",
    }
)
CODEX_QUIET_TOP = frozenset({"turn_context", "world_state", "inter_agent_communication_metadata"})

# opencode (formats.md §3)
OPENCODE_QUIET_PARTS = frozenset(
    {"step-start", "step-finish", "snapshot", "patch", "compaction", "retry", "agent"}
)
OPENCODE_QUIET_FILES = frozenset({"project", "session_diff", "todo", "migration", "share"})
