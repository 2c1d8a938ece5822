/**
 * The dispatch gate behind the capability socket. For every request:
 * authenticate the bearer against the leases valid on this socket, then
 * decide from the ONE tool table — deny-by-origin for the control plane,
 * deny-by-absence for unknown tools, deny when the lease lacks the
 * capability or the surface toggle is off, deny when the agent's tool
 * policy or role dropped the tool — and only then validate params and run
 * the tool. Every decision on an authenticated call emits one
 * content-free `capability:audited` event keyed by the run's leaseId.
 */
import type { Capability } from '../capabilities/capabilities.js';
import type { LeaseRegistry } from '../capabilities/lease.js';
import { findToolEntry, isControlPlaneTool, MESSAGE_ADMIN_TOOLS } from '../capabilities/tool-table.js';
import { CapCallError, type CapHandler } from '../capsocket/protocol.js';
import { ConfineError } from '../confine/index.js';
import { handleMcpRequest, type McpGateSurface } from '../mcp/gate.js';
import { describeDrop, type SurfaceDrop } from '../policy/surface.js';

export type AuditDecision = 'allow' | 'deny';

/** The `capability:audited` event: ids, names and a decision; never arguments or results. */
export interface CapabilityAudited {
  type: 'capability:audited';
  leaseId: string;
  runId: string;
  tool: string;
  capability: Capability | 'none';
  decision: AuditDecision;
  /**
   * Why a deny happened (a closed set), absent on allow. The last three are
   * policy denies (tool policy or role), recorded with capability `none`:
   * the capability was held, the agent's policy took the tool away.
   */
  reason?: 'capability_missing' | 'denied_by_origin' | 'unknown_tool' | 'surface_disabled' | 'explicit_deny' | 'not_in_profile' | 'role_coordinator' | 'host_denied' | 'approval_required' | 'approval_refused' | 'rate_limited';
  at: number;
}

export type ToolImpl = (args: unknown) => unknown;

export interface DispatchOptions {
  registry: LeaseRegistry;
  socketId: string;
  /** Implementations by tool name (daemon-side). */
  tools: Readonly<Record<string, ToolImpl>>;
  /** Surface toggles of the agent. */
  surfaces: { write: boolean };
  /** Tools the agent's tool policy or role dropped (agentSurface().dropped). */
  dropped?: ReadonlyMap<string, SurfaceDrop>;
  agentId: string;
  audit: (event: CapabilityAudited) => void;
  /** The mcp surface of the run (allowlist and comis's MCP client); absent: no server is reachable. */
  mcp?: McpGateSurface;
  /** Called for a request whose bearer is not a live lease on this socket (content-free). */
  onUnauthenticated?: () => void;
  /**
   * Called with a tool's failure that is not a tool error (a bug, a host
   * fault): the socket answers the script only its generic `internal`, so
   * this is where the error and its cause chain are kept (the runner logs them).
   */
  onInternalError?: (tool: string, err: unknown) => void;
}

/**
 * Tool names in audit events must not carry script-chosen text (a canary in a
 * made-up tool name would otherwise reach the store): names outside the table
 * are folded to a fixed label.
 */
function auditName(tool: string): string {
  if (findToolEntry(tool)) return tool;
  if (tool === 'gateway' || tool === 'mcp_manage' || tool === 'mcp_login' || MESSAGE_ADMIN_TOOLS.has(tool)) return tool;
  if (isControlPlaneTool(tool)) return '*_manage';
  return '<unknown>';
}

/** The tool table's schemas, once loaded: later calls skip the dynamic import's promise hop. */
let toolMap: typeof import('../capabilities/tool-map.js') | undefined;

export function createDispatcher(options: DispatchOptions): CapHandler {
  return async (request) => {
    const lease = options.registry.authenticate(request.bearer, options.socketId);
    if (!lease) {
      options.onUnauthenticated?.();
      throw new CapCallError('unauthenticated', 'no valid lease: the bearer is unknown, revoked, expired or for another run');
    }
    if (request.method === 'mcp' || request.method === 'mcp.describe') {
      // Its own gate (src/lib/mcp/gate.ts): policy, orch:mcp, the allowlist, the server's tool list.
      const drop = options.dropped?.get('mcp');
      return handleMcpRequest(request.method, request.params, {
        agentId: options.agentId,
        caps: lease.caps,
        dropped: drop ? { why: drop.why, message: describeDrop(options.agentId, 'mcp', drop) } : undefined,
        surface: options.mcp,
        audit: (tool, capability, decision, reason) => {
          const event: CapabilityAudited = { type: 'capability:audited', leaseId: lease.leaseId, runId: lease.runId ?? '', tool, capability, decision, at: Date.now() };
          if (reason) event.reason = reason;
          options.audit(event);
        },
      });
    }
    if (request.method !== 'tool.invoke') throw new CapCallError('unknown_method', 'the methods are tool.invoke and mcp');
    const params = request.params as { tool?: unknown; args?: unknown } | null;
    const tool = params && typeof params.tool === 'string' ? params.tool : undefined;
    if (!tool || tool.length > 128) throw new CapCallError('bad_request', 'tool.invoke needs params.tool (a tool name)');
    const audit = (capability: Capability | 'none', decision: AuditDecision, reason?: CapabilityAudited['reason']): void => {
      const event: CapabilityAudited = { type: 'capability:audited', leaseId: lease.leaseId, runId: lease.runId ?? '', tool: auditName(tool), capability, decision, at: Date.now() };
      if (reason) event.reason = reason;
      options.audit(event);
    };

    if (isControlPlaneTool(tool)) {
      audit('none', 'deny', 'denied_by_origin');
      if (MESSAGE_ADMIN_TOOLS.has(tool)) throw new CapCallError('denied_by_origin', `${tool} is in the admin subset of message.* (edit, delete, fetch), which orch:message does not include: never reachable from a jailed script`);
      throw new CapCallError('denied_by_origin', 'the administrative control plane is never reachable from a jailed script');
    }
    const spec = findToolEntry(tool);
    if (!spec) {
      audit('none', 'deny', 'unknown_tool');
      throw new CapCallError('unknown_tool', 'no such tool on the capability surface');
    }
    const drop = options.dropped?.get(spec.name);
    if (drop) {
      audit('none', 'deny', drop.why);
      throw new CapCallError('policy_denied', `${spec.name} is denied by the tool policy of agent "${options.agentId}" (${describeDrop(options.agentId, spec.name, drop)})`);
    }
    if (!lease.caps.includes(spec.capability)) {
      audit(spec.capability, 'deny', 'capability_missing');
      throw new CapCallError('capability_denied', `${spec.name} needs ${spec.capability}, which this run's lease does not hold (agent "${options.agentId}")`);
    }
    if (spec.surface === 'write' && !options.surfaces.write) {
      audit(spec.capability, 'deny', 'surface_disabled');
      throw new CapCallError('surface_disabled', `the write surface is off: set agents.${options.agentId}.autonomy.write: true to turn it on`);
    }
    audit(spec.capability, 'allow');
    // Schemas load on the first allowed call only: a run that calls no tool never pays for zod.
    const { findTool } = (toolMap ??= await import('../capabilities/tool-map.js'));
    const parsed = findTool(spec.name)!.params.safeParse(params?.args ?? {});
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      const where = first && first.path.length > 0 ? first.path.join('.') : 'params';
      throw new CapCallError('invalid_params', `${spec.name}: ${where}: ${first?.message ?? 'invalid'}`);
    }
    const impl = options.tools[spec.name];
    if (!impl) throw new CapCallError('unavailable', `${spec.name} is not available on this host`);
    try {
      return await impl(parsed.data);
    } catch (err) {
      // A confinement refusal is an ordinary tool error for the script, with its stable code.
      if (err instanceof ConfineError) throw new CapCallError(err.code, err.message);
      // A tool's own operator-policy refusal (web_fetch's denyHosts/allowHosts) is a deny too: audited, content-free.
      // So are message_*'s refusals: a send outside the origin without approval, a send past a limit.
      const auditReason = err instanceof CapCallError ? (err as { auditReason?: unknown }).auditReason : undefined;
      if (auditReason === 'host_denied' || auditReason === 'approval_required' || auditReason === 'approval_refused' || auditReason === 'rate_limited') audit(spec.capability, 'deny', auditReason);
      if (!(err instanceof CapCallError)) options.onInternalError?.(spec.name, err);
      throw err;
    }
  };
}
