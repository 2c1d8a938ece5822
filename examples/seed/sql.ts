const rows = await comis_tools.web_fetch({ url: "https://example.com/data.jsonl" });

// SQL over the materialized CSV/JSONL/JSON (DuckDB, read-only, daemon-side).
const top = await rows.sql(
  "SELECT id, price FROM read_json_auto('" + rows.ref + "') WHERE price > 100 ORDER BY price DESC LIMIT 5",
);
// Precise JSON extraction via a JSONPath $-expression (DuckDB json_extract — no eval library).
const firstPrice = await rows.jsonpath("$.items[0].price");

console.log(JSON.stringify(top));          // only the 5-row slice re-enters context
