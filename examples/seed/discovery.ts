import { comis_tools } from "./comis_tools.js";

// Discovery (progressive disclosure): names + capabilities + summaries.
const tools = comis_tools.describe();

// orch:read — workspace + self-tenant reads, run daemon-side under the jail's workspace.
await comis_tools.read({ path: "notes.md" });
await comis_tools.grep({ pattern: "TODO" });
await comis_tools.memory_search({ query: "deployment runbook" });

// orch:web — daemon-side, DNS-pinned (the jail itself stays --unshare-net).
await comis_tools.web_search({ query: "comisai release notes" });
await comis_tools.web_fetch({ url: "https://example.com" });
