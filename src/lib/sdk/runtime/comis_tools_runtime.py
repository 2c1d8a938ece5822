"""comis_tools: the typed tools of a jailed orchestrate script.

# @generated:begin header
Runtime source of the Python SDK (src/lib/sdk/runtime/comis_tools_runtime.py): real
Python that `comis sdk emit` copies, filling in each @generated region from the
tool table. It runs in the jail, so it imports the standard library only.
# @generated:end header

Each call is synchronous and dials the capability socket (COMIS_ORCH_SOCKET),
authenticated by the run's lease (COMIS_CAP_LEASE), with the same wire as the
TypeScript SDK: one JSON line {id, bearer, method, params} per call.
"""
import json as _json
import os as _os
import re as _re
import time as _time

# socket, subprocess and tempfile are imported where first used (the first
# tool call, the first slice): importing them here was most of what
# `import comis_tools` cost a script that never calls a tool.

# @generated:begin tool-table
_TOOLS = []
_SCHEMAS_JSON = "{}"
# @generated:end tool-table
# @generated:begin inline-payload
# Where the data of each data tool's inline result is (the tool table's inlinePayload).
_INLINE_PAYLOAD = {}
# @generated:end inline-payload
_schemas = None
_conn = None
_buffer = b""
_next_id = 1


class ComisToolError(Exception):
    """A tool call that the capability socket refused or that failed daemon-side."""

    def __init__(self, code, message, tool=None):
        super().__init__(message)
        self.code = code
        self.tool = tool


# @generated:begin jq-policy
# Placeholder that refuses every filter; the emitter writes the table of
# src/lib/resultref/slice-policy.ts here.
_JQ_FORBIDDEN = _re.compile(r"^")
# @generated:end jq-policy
_SLICE_TIMEOUT_S = 10
_SLICE_MAX_OUTPUT = 8 * 1024 * 1024


def _check_jq(expr):
    """Refuses a jq filter that reaches past the ref (modules, files, environment)."""
    if _JQ_FORBIDDEN.search(expr):
        raise ComisToolError("jq_refused", "jq may only transform this ref: no modules, files or environment")


def _run_tool(args, input_path, what):
    import subprocess as _subprocess

    try:
        if input_path is None:
            proc = _subprocess.run(args, stdin=_subprocess.DEVNULL, capture_output=True, env={}, timeout=_SLICE_TIMEOUT_S)
        else:
            # The payload goes to stdin straight from the file: never held in this process.
            with open(input_path, "rb") as f:
                proc = _subprocess.run(args, stdin=f, capture_output=True, env={}, timeout=_SLICE_TIMEOUT_S)
    except _subprocess.TimeoutExpired:
        raise ComisToolError("slice_timeout", "%s took longer than %d s" % (what, _SLICE_TIMEOUT_S))
    if len(proc.stdout) > _SLICE_MAX_OUTPUT:
        raise ComisToolError("slice_too_large", "%s output exceeds %d bytes" % (what, _SLICE_MAX_OUTPUT))
    if proc.returncode != 0 and not (args[0] == "grep" and proc.returncode == 1):
        tail = " ".join(proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:])
        raise ComisToolError("slice_failed", "%s: %s" % (what, tail))
    return proc.stdout.decode("utf-8")


def _grep_file(pattern, path):
    """grep -n -E over a file, as ResultRef.grep and the inline .grep() both run it."""
    out = _run_tool(["grep", "-n", "-E", "-e", str(pattern), path], None, "grep")
    result = []
    for l in out.split("\n"):
        if l:
            n, _, text = l.partition(":")
            result.append({"line": int(n), "text": text})
    return result


def _jq_file(expr, path):
    """jq -c over a file (each JSONL line one input), as ResultRef.jq and the inline .jq() both run it."""
    _check_jq(expr)
    out = _run_tool(["jq", "-c", expr], path, "jq")
    values = [_json.loads(l) for l in out.split("\n") if l]
    return values[0] if len(values) == 1 else values


class ResultRef:
    """A high-volume result kept on disk under the run's results/ directory.

    read/grep/jq slice it here in the jail; sql/jsonpath ask DuckDB outside.
    Only what you print re-enters the caller's context.
    """

    def __init__(self, handle):
        self.type = "ResultRef"
        self.ref = handle["ref"]
        self.kind = handle["kind"]
        self.bytes = handle["bytes"]
        self.rows = handle.get("rows")
        self.schema = handle.get("schema")
        self.preview = handle["preview"]
        self.expires_at = handle["expiresAt"]
        # web_fetch only: where the page came from and what it was (the content itself is the payload).
        self.url = handle.get("url")
        self.final_url = handle.get("finalUrl")
        self.status = handle.get("status")
        self.content_type = handle.get("contentType")
        self.title = handle.get("title")
        self.truncated = handle.get("truncated")
        self.untrusted = handle.get("untrusted")

    def __repr__(self):
        return "ResultRef(ref=%r, kind=%r, bytes=%d)" % (self.ref, self.kind, self.bytes)

    @property
    def path(self):
        return _os.path.join(_os.environ.get("COMIS_WORKSPACE") or _os.getcwd(), self.ref)

    def _live(self):
        if _time.time() * 1000 >= self.expires_at:
            raise ComisToolError("ref_expired", "this ResultRef has expired; fetch it again")
        return self.path

    def read(self, offset=0, limit=None):
        """Lines offset..offset+limit (0-based) of the payload, joined with newlines."""
        out = []
        end = None if limit is None else offset + limit
        with open(self._live(), "r", encoding="utf-8", newline="\n") as f:
            for i, line in enumerate(f):
                if end is not None and i >= end:
                    break
                if i >= offset:
                    out.append(line[:-1] if line.endswith("\n") else line)
        return "\n".join(out)

    def grep(self, pattern):
        """Lines matching a POSIX extended regular expression (grep -E), with 1-based line numbers."""
        return _grep_file(pattern, self._live())

    def jq(self, expr):
        """A jq filter over the payload (each JSONL line is one input). One output -> that value; else a list."""
        _check_jq(expr)  # refused before anything else, even on an expired handle
        return _jq_file(expr, self._live())

    def sql(self, query):
        """One read-only DuckDB SELECT (read the payload with read_json_auto/read_csv over self.ref)."""
        return invoke("ref_sql", {"ref": self.ref, "query": query})

    def jsonpath(self, expr):
        """A $-rooted JSONPath extraction (DuckDB json_extract; no eval)."""
        return invoke("ref_jsonpath", {"ref": self.ref, "expr": expr})


class _Slices:
    """The ResultRef methods over an inline payload (the bytes a ResultRef of it would hold).

    .read/.grep/.jq answer as on a ResultRef; .sql/.jsonpath need DuckDB over a
    file in results/ and raise ComisToolError("inline_result").
    """

    def read(self, offset=0, limit=None):
        """Lines offset..offset+limit (0-based) of the payload, joined with newlines."""
        lines = self._comis_payload.split("\n")
        if lines[-1] == "":
            lines.pop()
        return "\n".join(lines[offset:None if limit is None else offset + limit])

    def _with_file(self, work):
        import tempfile as _tempfile

        fd, path = _tempfile.mkstemp(prefix="comis-inline-")
        try:
            with _os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(self._comis_payload)
            return work(path)
        finally:
            _os.unlink(path)

    def grep(self, pattern):
        """Lines matching a POSIX extended regular expression (grep -E), with 1-based line numbers."""
        return self._with_file(lambda path: _grep_file(pattern, path))

    def jq(self, expr):
        """A jq filter over the payload. One output -> that value; else a list."""
        _check_jq(expr)
        return self._with_file(lambda path: _jq_file(expr, path))

    def sql(self, query):
        raise ComisToolError("inline_result", ".sql() runs DuckDB over a ResultRef; this result came back inline (under the 15,000-byte threshold): use .jq() or plain code on it")

    def jsonpath(self, expr):
        raise ComisToolError("inline_result", ".jsonpath() runs DuckDB over a ResultRef; this result came back inline (under the 15,000-byte threshold): use .jq() or plain code on it")


class InlineList(_Slices, list):
    """An inline list result (json.dumps and print see a plain list) with the ResultRef methods."""


class InlineDict(_Slices, dict):
    """An inline dict result (json.dumps and print see a plain dict) with the ResultRef methods."""


def _payload_text(payload):
    if isinstance(payload, str):
        return payload
    return _json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _wrap(value, tool=None):
    if isinstance(value, dict) and value.get("type") == "ResultRef":
        return ResultRef(value)
    where = _INLINE_PAYLOAD.get(tool) if tool is not None else None
    if where and isinstance(value, (list, dict)):
        wrapped = InlineList(value) if isinstance(value, list) else InlineDict(value)
        wrapped._comis_payload = _payload_text(value if where == "value" else value.get("content") if isinstance(value, dict) else None)
        return wrapped
    return value


def _connect():
    global _conn
    if _conn is not None:
        return _conn
    path = _os.environ.get("COMIS_ORCH_SOCKET")
    if not path or not _os.environ.get("COMIS_CAP_LEASE"):
        raise ComisToolError("lease_absent", "COMIS_ORCH_SOCKET and COMIS_CAP_LEASE are not set: comis_tools works inside `comis orchestrate` only.")
    import socket as _socket

    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    conn.connect(path)
    _conn = conn
    return conn


try:  # the runner sets it when the socket takes more (a durable run's checkpoint)
    _MAX_FRAME_BYTES = int(_os.environ.get("COMIS_FRAME_LIMIT") or 65536)
except ValueError:
    _MAX_FRAME_BYTES = 65536


# json.dumps with separators builds an encoder per call; the frame's is built once. The bearer is
# read from the environment once, as the TypeScript SDK does.
_FRAME_ENCODER = _json.JSONEncoder(separators=(",", ":"))
_bearer = None


def _call(method, params, tool=None):
    global _buffer, _next_id, _conn, _bearer
    call_id = _next_id
    _next_id += 1
    if _bearer is None:
        _bearer = _os.environ.get("COMIS_CAP_LEASE")
    frame = {"id": call_id, "bearer": _bearer, "method": method, "params": params}
    data = (_FRAME_ENCODER.encode(frame) + "\n").encode("utf-8")
    if len(data) > _MAX_FRAME_BYTES:
        # Refused here, with its size, rather than sent for the socket to close.
        raise ComisToolError("frame_too_large", "%s: the request is %d bytes, over the capability socket limit of %d bytes" % (tool or method, len(data), _MAX_FRAME_BYTES), tool)
    conn = _connect()
    conn.sendall(data)
    while True:
        newline = _buffer.find(b"\n")
        while newline == -1:
            chunk = conn.recv(65536)
            if not chunk:
                _conn = None
                raise ComisToolError("socket_closed", "the capability socket closed", tool)
            _buffer += chunk
            newline = _buffer.find(b"\n")
        line, _buffer = _buffer[:newline], _buffer[newline + 1:]
        if not line.strip():
            continue
        reply = _json.loads(line.decode("utf-8"))
        if reply.get("id") != call_id:
            continue
        if reply.get("ok"):
            return _wrap(reply.get("result"), tool)
        error = reply.get("error") or {}
        raise ComisToolError(error.get("code", "error"), error.get("message", "tool call failed"), tool)


def invoke(tool, params=None, **kwargs):
    """Calls a tool by name; the capability socket decides whether it is allowed."""
    args = dict(params or {})
    args.update(kwargs)
    return _call("tool.invoke", {"tool": tool, "args": args}, tool)


_outward_ordinal = 0


def _invoke_outward(tool, params, operation_id, kwargs):
    """An outward send (message_*): the operation id is the second argument (the
    upstream form, message_send(args, "report-send")), else operationId in the
    arguments, else "<run id>:msg:<ordinal>" (the n-th send of a run always
    carries the same key)."""
    global _outward_ordinal
    _outward_ordinal += 1
    args = dict(params or {})
    args.update(kwargs)
    if operation_id is not None:
        args["operationId"] = operation_id
    elif "operationId" not in args:
        args["operationId"] = "%s:msg:%d" % (_os.environ.get("COMIS_RUN_ID") or "run", _outward_ordinal)
    return _call("tool.invoke", {"tool": tool, "args": args}, tool)


_MCP_RESULT_SCHEMA = {
    "type": "object",
    "description": "McpResult (data, untrusted), or a ResultRef over 15,000 bytes",
    "properties": {"type": {"const": "McpResult"}, "source": {"type": "string"}, "isError": {"type": "boolean"}, "text": {"type": "string"}, "content": {"type": "array", "items": {"type": "object"}}, "structuredContent": {}, "truncated": {"type": "boolean"}, "untrusted": {"const": True}},
    "required": ["type", "source", "isError", "content", "untrusted"],
}
_mcp_digest = []


def _mcp_tools():
    """The MCP tools the runner wrote before the run (COMIS_MCP_TOOLS), read once; none when it did not."""
    if not _mcp_digest:
        tools = []
        path = _os.environ.get("COMIS_MCP_TOOLS")
        if path:
            try:
                with open(path, "r", encoding="utf-8") as f:
                    loaded = _json.load(f)
                tools = loaded if isinstance(loaded, list) else []
            except (OSError, ValueError):
                tools = []
        _mcp_digest.append(tools)
    return _mcp_digest[0]


def describe(name=None):
    """Every tool (name, capability, summary), then the allowlisted MCP tools with their descriptions
    and input schemas (asked of the servers before the run); or one tool in full with its JSON Schemas."""
    global _schemas
    if name is None:
        return [dict(t) for t in _TOOLS] + _json.loads(_json.dumps(_mcp_tools()))
    summary = next((t for t in _TOOLS if t["name"] == name), None)
    if summary is None:
        tool = next((t for t in _mcp_tools() if isinstance(t, dict) and t.get("name") == name and not t.get("unavailable")), None)
        if tool is None:
            return None
        tool = _json.loads(_json.dumps(tool))
        return dict(tool, params=tool.get("inputSchema") or {}, result=_json.loads(_json.dumps(_MCP_RESULT_SCHEMA)))
    if _schemas is None:
        _schemas = _json.loads(_SCHEMAS_JSON)
    full = _schemas[name]
    return dict(summary, params=full["params"], result=full["result"])


# comis_tools.mcp.<server>.<tool>({...}): allowlisted tools of connected MCP servers, one socket call
# each (synchronous). Names that start with "_" (dunders included) are refused, so nothing of Python's
# own protocol (__iter__, __await__, __class__, ...) ever becomes a call; a tool name with "-" is
# reached with [] (comis_tools.mcp.everything["get-sum"]({"a": 1, "b": 2})).
class _McpServer(object):
    __slots__ = ("_server",)

    def __init__(self, server):
        object.__setattr__(self, "_server", server)

    # __getattribute__, not __getattr__: even attributes every object has (__class__, __dict__,
    # __reduce__) are refused when asked for by name; Python's own slots (repr) still work.
    def __getattribute__(self, tool):
        if tool.startswith("_"):
            raise AttributeError(tool)
        return _mcp_tool(object.__getattribute__(self, "_server"), tool)

    def __getitem__(self, tool):
        if not isinstance(tool, str) or tool.startswith("__"):
            raise KeyError(tool)
        return _mcp_tool(object.__getattribute__(self, "_server"), tool)

    def __setattr__(self, name, value):
        raise AttributeError("comis_tools.mcp is read-only")

    def __repr__(self):
        return "<comis_tools.mcp server " + repr(object.__getattribute__(self, "_server")) + ">"


def _mcp_tool(server, tool):
    def call_tool(params=None, **kwargs):
        args = dict(params or {})
        args.update(kwargs)
        return _call("mcp", {"server": server, "tool": tool, "args": args}, "mcp." + server + "." + tool)

    return call_tool


_mcp_catalog = []


def _mcp_describe():
    """The MCP tools this agent may call, with descriptions and input schemas (fetched once per run)."""
    if not _mcp_catalog:
        _mcp_catalog.append(_call("mcp.describe", {}, "mcp"))
    return [dict(t) for t in _mcp_catalog[0]]


class _Mcp(object):
    __slots__ = ()

    def __getattribute__(self, server):
        if server.startswith("_"):
            raise AttributeError(server)
        if server == "describe":
            return _mcp_describe
        return _McpServer(server)

    def __getitem__(self, server):
        if not isinstance(server, str) or server.startswith("_"):
            raise KeyError(server)
        return _McpServer(server)

    def __setattr__(self, name, value):
        raise AttributeError("comis_tools.mcp is read-only")

    def __repr__(self):
        return "<comis_tools.mcp>"


mcp = _Mcp()


# @generated:begin tool-functions
# @generated:end tool-functions
