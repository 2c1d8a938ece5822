// Call an allowlisted tool on a connected MCP server. The server/tool set is
// operator-configured; comis_tools.mcp.<server>.<tool>(args) resolves at runtime.
const result = await comis_tools.mcp.myserver.mytool({ query: "hello" });
console.log(JSON.stringify(result));
