# The same chain in Python: synchronous calls, only stdout comes back.
import comis_tools

hits = comis_tools.grep({"pattern": "TODO", "glob": "**/*.md"})
files = sorted({m["path"] for m in hits["matches"]})
print(f"{len(hits['matches'])} TODOs in {len(files)} files")
for path in files:
    head = comis_tools.read({"path": path, "limit": 1})
    print(f"- {path}: {head['content']}")
