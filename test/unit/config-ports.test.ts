import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';

describe('PORT and METRICS_PORT', () => {
  it('when they are the same port, then the configuration is refused naming both, before anything listens', () => {
    expect(() => loadConfig({ PORT: '9464' })).toThrow(/METRICS_PORT and PORT: both 9464/);
    expect(() => loadConfig({ PORT: '3100', METRICS_PORT: '3100' })).toThrow(/METRICS_PORT and PORT/);
  });

  it('when they differ, or both pick a free port, then they are taken', () => {
    expect(loadConfig({ PORT: '3100', METRICS_PORT: '3101' })).toMatchObject({
      PORT: 3100,
      METRICS_PORT: 3101,
    });
    expect(loadConfig({ PORT: '0', METRICS_PORT: '0' })).toMatchObject({ PORT: 0, METRICS_PORT: 0 });
  });
});
