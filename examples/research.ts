// Seed 000, "Worked example — research in one turn": search, pull the top URLs
// out of the results in the jail, fetch and slice each page, print only the
// synthesis. Needs agents.<id>.web.search (docs/config.md) and the web_fetch
// policy to allow the hosts it reaches. Run: comis orchestrate examples/research.ts
import { comis_tools } from "./comis_tools.js";

// 1. Search (daemon-side, DNS-pinned) → a ResultRef, not a wall of text in context.
const results = await comis_tools.web_search({ query: "comis autonomy model" });
// 2. Pull the top URLs out of the handle, in-jail.
const urls = (await results.jq("[.[].url][0:3]")) as string[];
// 3. Fetch + extract each (each a ResultRef), slice the readable head in-jail.
const summaries: string[] = [];
for (const url of urls) {
  const page = await comis_tools.web_fetch({ url });
  summaries.push(await page.read(0, 60));
}
// 4. ONLY the final synthesized slice re-enters the conversation.
console.log(summaries.join("\n---\n"));
