/**
 * `agents.<id>.model`: the agent's own model, as comis itself uses it (today:
 * the one-shot repair of a failed run, seed 000 "One-shot repair").
 *
 * Semantics: an OpenAI-compatible chat-completions endpoint (Ollama,
 * llama.cpp server, vLLM, LM Studio, hosted APIs) and the model's capability
 * class. The class is the only control of the repair: on for `nano`/`small`
 * (and when no class is set), off for `mid`/`frontier`. The endpoint is
 * operator-trusted config (not subject to the SSRF guard, no redirect
 * followed). An API key is never written in config: `apiKeyEnv` names the
 * environment variable of the comis process that holds it; its value is
 * registered with the output guard when the agent is resolved, so no log,
 * error, record or report carries it, and it is sent only to `baseUrl`.
 *
 * Shorthand: a bare model id (`model: gpt-5.1`, as seed 001's coordinator
 * example writes it) takes its endpoint from the comis process's
 * `OPENAI_BASE_URL` and its key from `OPENAI_API_KEY`, the convention of
 * OpenAI-compatible clients. There is no built-in default endpoint: with
 * `OPENAI_BASE_URL` unset there is nothing to ask (no script ever leaves the
 * machine because a name was written), and no run is repaired.
 */
import { z } from 'zod';

export const MODEL_CLASSES = ['nano', 'small', 'mid', 'frontier'] as const;

const modelObjectSchema = z
  .strictObject({
    baseUrl: z.url({ protocol: /^https?$/, normalize: true }).describe('The OpenAI-compatible API root, http or https, usually ending in /v1 (Ollama: http://127.0.0.1:11434/v1); comis POSTs <baseUrl>/chat/completions.'),
    name: z.string().min(1).max(256).describe('The model id sent as "model" in each request (e.g. qwen2.5-coder:7b).'),
    class: z.enum(MODEL_CLASSES).optional().describe('Capability class: nano | small | mid | frontier. nano and small (and no class at all) get one automatic repair of a failed run; mid and frontier get none.'),
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'an environment variable name (letters, digits, "_")')
      .optional()
      .describe('The NAME of the environment variable holding the API key, sent as Authorization: Bearer. The key itself never goes in config and is never printed. Absent: no Authorization header (local servers).'),
    timeoutMs: z.number().int().min(1000).max(120_000).default(60_000).describe('Most time one chat-completions request may take, in ms (connect, headers and body); retries share a 120 s repair budget.'),
  })
  .describe("The agent's model: an OpenAI-compatible chat-completions endpoint and its capability class. Used for the one-shot repair of a failed run.");

const MODEL_NAME = z.string().min(1).max(256);

export const modelSchema = z
  .union([
    MODEL_NAME.describe(
      'Shorthand: only the model id (e.g. gpt-5.1). The endpoint comes from the OPENAI_BASE_URL environment variable of the comis process and the key from OPENAI_API_KEY; with OPENAI_BASE_URL unset there is nothing to ask and no run is repaired.',
    ),
    modelObjectSchema,
  ])
  .describe("The agent's model: an OpenAI-compatible chat-completions endpoint and its capability class (or just a model id, with the endpoint from OPENAI_BASE_URL). Used for the one-shot repair of a failed run.");

/** A model comis can ask: an endpoint, a name, a class. */
export type ModelConfig = z.infer<typeof modelObjectSchema>;
/** What `agents.<id>.model` may hold: the full form, or a bare model id. */
export type ModelSetting = z.infer<typeof modelSchema>;
