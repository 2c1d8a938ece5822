// orch:write — write a file into the jailed run workspace (path-confined, run-ephemeral).
await comis_tools.write({ path: "summary.md", content: "# Findings" });

// orch:message — send outward to the agent's own origin channel.
await comis_tools.message_send({ channel_type: "telegram", channel_id: "chat123", text: "Done." });
