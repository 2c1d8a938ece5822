import comis_tools

# Each call dials the same cap-socket wire as the TypeScript SDK; only the idiom
# differs (synchronous, module-level). web_fetch runs daemon-side, DNS-pinned.
page = comis_tools.web_fetch({"url": "https://example.com/big"})  # a ResultRef, not a wall of text
hits = page.grep("error")     # slice the materialized file in-jail
head = page.read(0, 40)       # read a 40-line/byte slice

print(head)                   # only this slice re-enters the conversation
