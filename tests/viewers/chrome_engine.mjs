// tests/viewers/chrome_engine.mjs NODE_MODULES TRACE.json: load a Chrome
// trace into the DevTools performance panel's trace engine (npm
// @paulirish/trace_engine) and print, as one JSON object, what it made of
// it: per thread the slices it built and how many are top level, and
// every flow it resolved as its bound events [name, ph, ts, pid, tid].
import fs from 'node:fs';
import path from 'node:path';
import url from 'node:url';

const [nodeModules, tracePath] = process.argv.slice(2);
const entry = path.join(nodeModules, '@paulirish/trace_engine/models/trace/trace.js');
const Trace = await import(url.pathToFileURL(entry).href);
const trace = JSON.parse(fs.readFileSync(tracePath, 'utf8'));
const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(trace.traceEvents);
const data = model.parsedTrace().data;
const threads = [];
for (const [pid, proc] of data.Renderer.processes) {
  for (const [tid, thread] of proc.threads) {
    threads.push({pid, tid, name: thread.name ?? null, entries: thread.entries.length,
                  roots: thread.tree ? thread.tree.roots.size : 0});
  }
}
const flows = data.Flows.flows.map(f => f.map(e => [e.name, e.ph, e.ts, e.pid, e.tid]));
process.stdout.write(JSON.stringify({threads, flows}) + '\n');
