result = comis_tools.mcp.myserver.mytool({"query": "hello"})
print(result)
