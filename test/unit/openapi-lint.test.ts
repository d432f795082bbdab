// The OpenAPI document as two linters used across the field read it: Spectral's `spectral:oas` ruleset and
// Redocly's `recommended` rules, each run here as a library on the document the service serves.
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { Document, Spectral, type RulesetDefinition } from '@stoplight/spectral-core';
import { Json } from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';
import { describe, expect, it } from 'vitest';
import { defaultDocument } from '../helpers/openapi-validator.js';

const text = JSON.stringify(defaultDocument(), null, 2);

describe('the OpenAPI document', () => {
  it("passes Spectral's spectral:oas rules without an error or a warning", async () => {
    const spectral = new Spectral();
    spectral.setRuleset({ extends: [[oas as RulesetDefinition, 'recommended']] });
    const results = await spectral.run(new Document(text, Json, 'openapi.json'));
    expect(results.map((r) => `${r.code} at ${r.path.join('.')}: ${r.message}`)).toEqual([]);
  });

  it("passes Redocly's recommended rules without an error or a warning", async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: text, absoluteRef: 'openapi.json', config });
    expect(problems.map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`)).toEqual([]);
  });
});
