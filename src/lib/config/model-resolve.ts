/**
 * The model an agent's `model` setting names, resolved for use (zod-free: loaded on the hot path
 * of every run). The full form is used as written; a bare model id (`model: gpt-5.1`, seed 001's
 * coordinator example) takes its endpoint from `OPENAI_BASE_URL` and its key from
 * `OPENAI_API_KEY`, the convention of OpenAI-compatible clients. There is no default endpoint:
 * a name alone never sends a script off the machine.
 */
import type { ModelConfig, ModelSetting } from './model-schema.js';

/** The environment variables a bare model id takes its endpoint and key from. */
export const SHORTHAND_BASE_URL_ENV = 'OPENAI_BASE_URL';
export const SHORTHAND_KEY_ENV = 'OPENAI_API_KEY';

/**
 * The model to ask for an agent's setting: the full form as written; a bare id with the
 * endpoint of `OPENAI_BASE_URL` (and `OPENAI_API_KEY` when set), or undefined when that is unset
 * or not an http(s) URL (the loader refuses the latter when the agent is resolved, by name).
 */
export function resolveModel(setting: ModelSetting | undefined, env: NodeJS.ProcessEnv = process.env): ModelConfig | undefined {
  if (setting === undefined || typeof setting !== 'string') return setting;
  const baseUrl = shorthandBaseUrl(env);
  if (baseUrl === undefined || baseUrl === null) return undefined;
  return { baseUrl, name: setting, timeoutMs: 60_000, ...(env[SHORTHAND_KEY_ENV] ? { apiKeyEnv: SHORTHAND_KEY_ENV } : {}) };
}

/** `OPENAI_BASE_URL` as an http(s) URL; undefined when unset or empty, null when it is not one. */
export function shorthandBaseUrl(env: NodeJS.ProcessEnv = process.env): string | undefined | null {
  const raw = env[SHORTHAND_BASE_URL_ENV];
  if (raw === undefined || raw === '') return undefined;
  try {
    const url = new URL(raw);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}
