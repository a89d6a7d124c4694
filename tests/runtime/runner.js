// runner.js ORT_DIR JOBS.json - runs models in ONNX Runtime (onnxruntime-node, CPU) and
// prints one JSON line per job: {"id", "outputs": {name: "dtype dims sha256"}} or
// {"id", "error": ORT's message}.
//
// JOBS.json: [{"id", "model": path, "feeds": {name: {"type", "dims", "data"}}}], data a
// flat list (numbers, booleans for bool, strings for string; int64 as decimal strings).
// Every session: CPU execution provider, one intra-op and one inter-op thread, sequential
// execution, so that a model's outputs are the same bytes on every run. One process runs
// every job (node's start-up and ORT's loading cost more than most models).
'use strict';
const path = require('path');
const fs = require('fs');
const crypto = require('crypto');

const ort = require(path.resolve(process.argv[2], 'node_modules', 'onnxruntime-node'));
const jobs = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));

const arrays = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
  int64: BigInt64Array, uint64: BigUint64Array, bool: Uint8Array,
};

function tensor(f) {
  if (f.type === 'string') return new ort.Tensor('string', f.data, f.dims);
  const A = arrays[f.type];
  const data = f.type.endsWith('int64') ? A.from(f.data.map(BigInt)) : A.from(f.data.map(Number));
  return new ort.Tensor(f.type, data, f.dims);
}

function digest(t) {
  const h = crypto.createHash('sha256');
  if (t.type === 'string') h.update(JSON.stringify(t.data));
  else h.update(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  return `${t.type} [${t.dims.join(',')}] ${h.digest('hex')}`;
}

const options = {
  executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1,
  executionMode: 'sequential',
};

async function run(job) {
  let session;
  try {
    session = await ort.InferenceSession.create(job.model, options);
  } catch (e) {
    return {id: job.id, error: `session: ${e.message}`};
  }
  try {
    const feeds = {};
    for (const [name, f] of Object.entries(job.feeds)) feeds[name] = tensor(f);
    const results = await session.run(feeds);
    const outputs = {};
    for (const name of session.outputNames) outputs[name] = digest(results[name]);
    return {id: job.id, outputs};
  } catch (e) {
    return {id: job.id, error: `run: ${e.message}`};
  } finally {
    await session.release();
  }
}

(async () => {
  for (const job of jobs) process.stdout.write(JSON.stringify(await run(job)) + '\n');
})().catch((e) => {
  process.stderr.write(`runner: ${e.stack}\n`);
  process.exit(1);
});
