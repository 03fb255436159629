// tests/viewers/pprof_labels.mjs NODE_MODULES PROFILE.pb.gz: decode a
// gzipped pprof profile with the npm pprof-format decoder and print, as one
// JSON object, each sample's stack (leaf first), its values and its labels
// as pprof's own tools keep them: a string label when str is set, a numeric
// one when num or num_unit is (a numeric label of 0 without a unit is
// dropped, as pprof drops it).
import fs from 'node:fs';
import path from 'node:path';
import url from 'node:url';
import zlib from 'node:zlib';

const [nodeModules, file] = process.argv.slice(2);
const entry = path.join(nodeModules, 'pprof-format/dist/commonjs/index.js');
const {Profile} = await import(url.pathToFileURL(entry).href);
const prof = Profile.decode(zlib.gunzipSync(fs.readFileSync(file)));
const str = i => prof.stringTable.strings[Number(i)];
const fn = new Map(prof.function.map(f => [Number(f.id), str(f.name)]));
const loc = new Map(prof.location.map(l => [Number(l.id), fn.get(Number(l.line[0].functionId))]));
const samples = prof.sample.map(s => {
  const labels = {}, numeric = {};
  for (const l of s.label) {
    if (Number(l.str)) labels[str(l.key)] = str(l.str);
    else if (Number(l.num) || Number(l.numUnit)) numeric[str(l.key)] = [Number(l.num), str(l.numUnit)];
  }
  return {stack: s.locationId.map(i => loc.get(Number(i))), values: s.value.map(Number), labels, numeric};
});
process.stdout.write(JSON.stringify({samples}) + '\n');
