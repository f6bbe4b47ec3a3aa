// Two `hark serve` instances behind nginx (deploy/nginx/hark.conf), driven through nginx
// with the official OpenAI SDK and streaming sessions; instance hark1 gets SIGTERM while it
// has work queued. Checks: every request hark1 had accepted completes, sessions stay on
// their instance (hark2's keep working, hark1's end with a clear error), SSE is not
// buffered, and the requests sent during the drain succeed on hark2.
// Env: NGINX_URL, HARK1_URL, HARK1_PID, CLIP_A, CLIP_B (short English clips), LONG_CLIP
// (> 30 s, starting with CLIP_A).
import fs from 'node:fs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const env = process.env;
const nginx = env.NGINX_URL;
const client = new OpenAI({ baseURL: `${nginx}/v1`, apiKey: 'not-needed', maxRetries: 0, timeout: 600_000 });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.log('replicas:', ...a);

// Text each clip must give (the bundled toy model gets these right).
const SAYS = { A: 'darkness', B: 'difference' };
function says(text, word, what) {
  assert.ok(text.toLowerCase().includes(word), `${what}: '${text.slice(0, 200)}' lacks '${word}'`);
}

async function transcribe(clip, extra = {}) {
  const { data, response } = await client.audio.transcriptions
    .create({ file: fs.createReadStream(clip), model: 'whisper-1', ...extra })
    .withResponse();
  return { text: data.text, instance: response.headers.get('x-hark-instance') };
}

async function openSession() {
  const r = await fetch(`${nginx}/v1/audio/sessions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"language":"en"}',
  });
  assert.equal(r.status, 200, await r.clone().text());
  const { id } = await r.json();
  const instance = r.headers.get('x-hark-instance');
  assert.ok(id.startsWith(`sess_${instance}_`), `session ${id} was opened by ${instance}`);
  return { id, instance };
}

async function sessionCall(s, path, body, type = 'audio/wav') {
  const r = await fetch(`${nginx}/v1/audio/sessions/${s.id}/${path}`, { method: 'POST', headers: { 'content-type': type }, body });
  return { status: r.status, instance: r.headers.get('x-hark-instance'), body: await r.json() };
}

// SSE through nginx: the first delta must arrive in an earlier read than the final event.
async function streamArrivesIncrementally() {
  const form = new FormData();
  form.append('file', new Blob([fs.readFileSync(env.LONG_CLIP)]), 'long.wav');
  form.append('stream', 'true');
  const r = await fetch(`${nginx}/v1/audio/transcriptions`, { method: 'POST', body: form });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /text\/event-stream/);
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let text = '', reads = 0, firstDeltaRead = -1, doneRead = -1;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    reads++;
    text += decoder.decode(value, { stream: true });
    if (firstDeltaRead < 0 && text.includes('event: transcript.text.delta')) firstDeltaRead = reads;
    if (doneRead < 0 && text.includes('event: transcript.text.done')) doneRead = reads;
  }
  assert.ok(firstDeltaRead > 0 && doneRead > firstDeltaRead,
            `SSE was buffered: first delta in read ${firstDeltaRead}, done in read ${doneRead} of ${reads}`);
  says(text, SAYS.A, 'SSE through nginx');
}

async function health(url) {
  try {
    return (await fetch(`${url}/health`)).status;
  } catch {
    return 'down';
  }
}

async function main() {
  // Affinity: sessions opened through nginx land on both instances and stay there.
  const sessions = [];
  for (let i = 0; i < 2; i++) sessions.push(await openSession());
  const on = (name) => sessions.filter((s) => s.instance === name);
  assert.ok(on('hark1').length > 0 && on('hark2').length > 0, `sessions: ${sessions.map((s) => s.instance)}`);
  const clipA = fs.readFileSync(env.CLIP_A), clipB = fs.readFileSync(env.CLIP_B);
  for (const s of sessions) {
    const r = await sessionCall(s, 'audio', clipA);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.instance, s.instance, `session ${s.id} answered by ${r.instance}`);
  }
  await streamArrivesIncrementally();

  // Two jobs on each instance (least_conn), then SIGTERM hark1 while it holds both
  // (batching, the default: both running; with --max-batch 1: one running, one queued).
  const accepted = [
    transcribe(env.CLIP_A),
    transcribe(env.CLIP_A, { response_format: 'verbose_json' }),
    transcribe(env.CLIP_A),
    transcribe(env.CLIP_A, { response_format: 'verbose_json' }),
  ];
  let held = 0;
  for (let i = 0; i < 1500 && held < 2; i++) {
    const queue = (await (await fetch(`${env.HARK1_URL}/stats`)).json()).queue;
    held = queue.depth + queue.running;
    if (held < 2) await sleep(20);
  }
  assert.ok(held >= 2, 'hark1 never held two jobs at once');
  process.kill(Number(env.HARK1_PID), 'SIGTERM');
  let state = 200;
  for (let i = 0; i < 1500 && state === 200; i++) {
    state = await health(env.HARK1_URL);
    if (state === 200) await sleep(10);
  }
  log(`hark1 after SIGTERM: /health ${state}`);

  // During the drain: new work through nginx succeeds on hark2 (nginx retries hark1's 503s).
  // Four at once: while they are in flight least_conn must pick hark1 for one of them.
  const during = await Promise.all([0, 1, 2, 3].map((i) => transcribe(i % 2 ? env.CLIP_B : env.CLIP_A)));
  during.forEach((r, i) => {
    says(r.text, i % 2 ? SAYS.B : SAYS.A, `request ${i} during the drain`);
    assert.equal(r.instance, 'hark2', `request ${i} during the drain was answered by ${r.instance}`);
  });
  // hark2's sessions go on; hark1's were closed, with an error that says what to do.
  for (const s of sessions) {
    const r = await sessionCall(s, 'audio', clipB);
    if (s.instance === 'hark2') {
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.instance, 'hark2');
      const done = await sessionCall(s, 'finish', '{}', 'application/json');
      assert.equal(done.status, 200, JSON.stringify(done.body));
      assert.equal(done.instance, 'hark2');
      says(done.body.text, SAYS.A, `session ${s.id}`);
      says(done.body.text, SAYS.B, `session ${s.id}`);
    } else {
      assert.equal(r.status, 503, JSON.stringify(r.body));
      assert.ok(['session_closed', 'no_instance'].includes(r.body.error.code), JSON.stringify(r.body));
      assert.match(r.body.error.message, /new session/);
    }
  }

  // Everything accepted before the SIGTERM completed, on whichever instance took it.
  const results = await Promise.all(accepted);
  results.forEach((r, i) => says(r.text, SAYS.A, `accepted request ${i} (${r.instance})`));
  const byHark1 = results.filter((r) => r.instance === 'hark1').length;
  assert.ok(byHark1 >= 1, `hark1 answered none of the accepted requests: ${results.map((r) => r.instance)}`);
  log(`accepted before SIGTERM: ${results.length} completed (${byHark1} by the draining hark1); ` +
      `${during.length} sent during the drain completed on hark2; sessions: ${on('hark2').length} kept on hark2, ` +
      `${on('hark1').length} closed on hark1`);
}

main().catch((e) => {
  console.error('replicas test failed:', e);
  process.exit(1);
});
