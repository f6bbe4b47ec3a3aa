// Silero VAD (silero_vad.onnx) through ONNX Runtime for Node, single-threaded, chunk by chunk,
// exactly as silero-vad's OnnxWrapper: 64-sample context + 512-sample chunk, state [2,1,128].
// The comparison point for bench/vad_bench.cc (docs/benchmarks.md, section VAD). Setup, outside
// the repository: mkdir /tmp/ortbench && cd /tmp/ortbench && npm install --ignore-scripts onnxruntime-node@1
// usage: NODE_PATH=/tmp/ortbench/node_modules node bench/vad_ort_bench.js MODEL INPUT.f32 OUT.f32
//        NODE_PATH=/tmp/ortbench/node_modules node bench/vad_ort_bench.js MODEL --bench WAV SECONDS
const ort = require('onnxruntime-node');
const fs = require('fs');

function readWav16(path) {
  const b = fs.readFileSync(path);
  let pos = 12;
  while (pos + 8 <= b.length) {
    const id = b.toString('ascii', pos, pos + 4), size = b.readUInt32LE(pos + 4);
    pos += 8;
    if (id === 'data') {
      const out = new Float32Array(size / 2);
      for (let i = 0; i < out.length; i++) out[i] = b.readInt16LE(pos + 2 * i) / 32768;
      return out;
    }
    pos += size + (size & 1);
  }
  throw new Error('no data chunk');
}

async function run(session, audio) {
  const n = Math.ceil(audio.length / 512);
  const probs = new Float32Array(n);
  let state = new ort.Tensor('float32', new Float32Array(256), [2, 1, 128]);
  const sr = new ort.Tensor('int64', BigInt64Array.from([16000n]), []);
  const x = new Float32Array(576);
  for (let c = 0; c < n; c++) {
    x.copyWithin(0, 512, 576);  // context: the last 64 samples of the previous input
    if (c === 0) x.fill(0, 0, 64);
    const chunk = audio.subarray(c * 512, Math.min(audio.length, (c + 1) * 512));
    x.fill(0, 64);
    x.set(chunk, 64);
    const out = await session.run({ input: new ort.Tensor('float32', x.slice(), [1, 576]), state, sr });
    probs[c] = out.output.data[0];
    state = out.stateN;
  }
  return probs;
}

(async () => {
  const [model, a, b, c] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' });
  if (a === '--bench') {
    const clip = readWav16(b), total = Math.round(Number(c) * 16000);
    const audio = new Float32Array(total);
    for (let i = 0; i < total; i++) audio[i] = clip[i % clip.length];
    const t0 = process.hrtime.bigint(), cpu0 = process.cpuUsage();
    const probs = await run(session, audio);
    const wall = Number(process.hrtime.bigint() - t0) / 1e9, cpu = process.cpuUsage(cpu0);
    const cpuS = (cpu.user + cpu.system) / 1e6;
    console.log(JSON.stringify({ audio_s: total / 16000, chunks: probs.length, wall_s: wall, cpu_s: cpuS,
                                 ms_per_chunk_wall: 1000 * wall / probs.length, ms_per_chunk_cpu: 1000 * cpuS / probs.length }));
  } else {
    const buf = fs.readFileSync(a);
    const audio = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
    fs.writeFileSync(b, Buffer.from((await run(session, audio)).buffer));
  }
})();
