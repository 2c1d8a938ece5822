import { describe, expect, it } from 'vitest';

import { JQ_FORBIDDEN_BUILTINS, JQ_FORBIDDEN_SOURCE, JQ_FORBIDDEN_VARIABLES, jqFilterRefused } from '../../src/lib/resultref/slice-policy.js';

describe('jq slice policy (the one table)', () => {
  it('lists exactly the builtins and variables that reach past the payload', () => {
    expect([...JQ_FORBIDDEN_BUILTINS]).toEqual(['import', 'include', 'modulemeta', 'get_search_list', 'get_prog_origin', 'get_jq_origin', 'input_filename', 'env', 'halt_error', 'input_line_number']);
    expect([...JQ_FORBIDDEN_VARIABLES]).toEqual(['ENV', '__loc__', '__prog_args']);
  });

  it('is one regex source that says the same in JS and Python re: word-bounded builtins, $-prefixed variables', () => {
    expect(JQ_FORBIDDEN_SOURCE).toBe('\\b(import|include|modulemeta|get_search_list|get_prog_origin|get_jq_origin|input_filename|env|halt_error|input_line_number)\\b|\\$(ENV|__loc__|__prog_args)\\b');
  });

  it('refuses every forbidden builtin as a whole word, wherever it sits in the filter', () => {
    for (const b of JQ_FORBIDDEN_BUILTINS) {
      expect(jqFilterRefused(b), b).toBe(true);
      expect(jqFilterRefused(`.a | ${b}`), b).toBe(true);
      expect(jqFilterRefused(`[${b}]`), b).toBe(true);
      expect(jqFilterRefused(`.x|${b}|.y`), b).toBe(true);
    }
    expect(jqFilterRefused('import "a" as a; .')).toBe(true);
    expect(jqFilterRefused('env.HOME')).toBe(true);
  });

  it('refuses every forbidden special variable, and only with its $', () => {
    for (const v of JQ_FORBIDDEN_VARIABLES) {
      expect(jqFilterRefused(`$${v}`), v).toBe(true);
      expect(jqFilterRefused(`.a + $${v}.x`), v).toBe(true);
    }
    expect(jqFilterRefused('.ENV')).toBe(false);
    expect(jqFilterRefused('$ENVIRONMENT')).toBe(false);
    expect(jqFilterRefused('$__loc__x')).toBe(false);
  });

  it('lets ordinary filters through, including names that only contain a forbidden word', () => {
    for (const ok of ['.', '.items[] | .name', 'map(select(.envelope))', '.environment', 'length', '.imports', 'reduce .[] as $x (0; . + $x)', '.halt_errors', 'inputs', '$env_x', 'myenv', 'included']) {
      expect(jqFilterRefused(ok), ok).toBe(false);
    }
  });
});
