// Seed 000, "Worked example — fetch, transform, send in one turn", as written.
// Needs a telegram channel and the origin set (docs/messages.md), e.g.:
//   channels: { telegram: { type: telegram, tokenEnv: TELEGRAM_BOT_TOKEN } }
//   agents: { default: { autonomy: { write: true, message: { origin: telegram/chat123 } } } }
// Run: comis orchestrate examples/fetch-transform-send.ts
import { comis_tools } from "./comis_tools.js";

// 1. Fetch (daemon-side, DNS-pinned) → a ResultRef, not a wall of text in context.
const report = await comis_tools.web_fetch({ url: "https://example.com/report.json" });
// 2. Transform in-jail — slice just the field we need out of the handle.
const total = (await report.jq(".summary.total")) as number;
// 3. Persist a working note into the run workspace (orch:write).
await comis_tools.write({ path: "note.md", content: `Report total: ${total}` });
// 4. Send the one-line result outward to the origin channel (orch:message).
await comis_tools.message_send({ channel_type: "telegram", channel_id: "chat123", text: `Report total: ${total}` });
// 5. Only this final line re-enters the conversation.
console.log(`sent total=${total}`);
