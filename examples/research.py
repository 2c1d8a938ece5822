# The research chain of seed 000 in Python: the same calls, synchronous.
# Run: comis orchestrate examples/research.py
import comis_tools

# 1. Search (daemon-side) -> the hits, or a ResultRef of them when big.
results = comis_tools.web_search({"query": "comis autonomy model"})
# 2. Pull the top URLs out of the result, in-jail.
urls = results.jq("[.[].url][0:3]")
# 3. Fetch + extract each, slice the readable head in-jail.
summaries = []
for url in urls:
    page = comis_tools.web_fetch({"url": url})
    summaries.append(page.read(0, 60))
# 4. Only the final synthesized slice re-enters the conversation.
print("\n---\n".join(summaries))
