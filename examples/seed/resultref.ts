const page = await comis_tools.web_fetch({ url: "https://example.com/big" });
// page is a ResultRef { ref, kind, bytes, preview, expiresAt, ... }

const ids = await page.jq(".[].id");      // run jq over the materialized JSON
const hits = await page.grep("error");     // grep the materialized file
const head = await page.read(0, 40);       // read a 40-line/byte slice

console.log(JSON.stringify(ids));          // only this slice re-enters context
