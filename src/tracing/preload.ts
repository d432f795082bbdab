// Loaded before a process's entry (`node --import ./dist/src/tracing/preload.js dist/src/server.js`, as the
// Procfile does). With OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) unset, or with
// OTEL_SDK_DISABLED=true, it does nothing else: no OpenTelemetry module is loaded. Set, it starts tracing before
// the entry is loaded, as ES modules require: an import is hooked (import-in-the-middle) only if the hook was
// registered before it ran.
import path from 'node:path';

/** The process's role, its default service name, from its entry file: web, worker or clock. */
export function roleOf(entry: string | undefined): string {
  const name = path.basename(entry ?? 'node').replace(/\.(ts|js)$/, '');
  return name === 'server' || name === 'web' ? 'web' : name === 'order.worker' ? 'worker' : name;
}

const endpoint = process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
if (endpoint && process.env.OTEL_SDK_DISABLED !== 'true') {
  const { register } = await import('node:module');
  const { createAddHookMessageChannel } = await import('import-in-the-middle');
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);
  const { startOtel } = await import('./otel.js');
  startOtel(roleOf(process.argv[1]));
  await waitForAllMessagesAcknowledged();
}
