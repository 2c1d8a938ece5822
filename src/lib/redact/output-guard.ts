/**
 * The output guard: every secret comis holds (lease bearers, configured API
 * keys) is registered here at the moment it is minted or loaded, and every
 * line comis writes to a log, an error message or a report passes through
 * {@link redactSecrets} first.
 *
 * Security property: a registered secret never leaves the process in clear,
 * whatever code path formats it, as long as that path goes through the guard.
 *
 * A leaf on purpose: it imports nothing, so config (API keys), capabilities
 * (bearers), obs (the logger) and the CLI all register and redact here
 * without one layer reaching up into another.
 */
const secrets = new Set<string>();

/** Minimum length of a registered secret: shorter strings would redact ordinary words. */
const MIN_SECRET_LENGTH = 8;

export const REDACTED = '[REDACTED]';

export function registerSecret(value: string | undefined | null): void {
  if (typeof value === 'string' && value.length >= MIN_SECRET_LENGTH) secrets.add(value);
}

export function unregisterSecret(value: string): void {
  secrets.delete(value);
}

/** How many secrets the guard holds (each redaction walks them all). */
export function registeredSecretCount(): number {
  return secrets.size;
}

export function redactSecrets(text: string): string {
  if (secrets.size === 0 || text.length === 0) return text;
  let out = text;
  for (const secret of secrets) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  return out;
}

/** Deep-redacts the string leaves of a JSON-like value. */
export function redactValue<T>(value: T): T {
  if (secrets.size === 0) return value;
  if (typeof value === 'string') return redactSecrets(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactValue(v)) as T;
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = redactValue(v);
    return out as T;
  }
  return value;
}
