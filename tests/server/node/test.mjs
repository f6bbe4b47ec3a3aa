// The official OpenAI Node.js SDK against a running `hark serve`: transcriptions and
// translations in every response format, stream: true, timestamp_granularities, and the
// non-standard fields passed through. Exits non-zero on the first wrong answer.
// Env: HARK_URL (http://127.0.0.1:PORT), HARK_AUDIO (a speech clip), HARK_EXPECT (a
// lower-case phrase the transcript must contain), HARK_API_KEY (optional).
import fs from 'node:fs';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: `${process.env.HARK_URL}/v1`,
  apiKey: process.env.HARK_API_KEY || 'not-needed',
  maxRetries: 0,
  timeout: 600_000,
});
const audio = process.env.HARK_AUDIO;
const expect = (process.env.HARK_EXPECT || '').toLowerCase();
const file = () => fs.createReadStream(audio);
let checks = 0;

function contains(text, what) {
  assert.ok(typeof text === 'string', `expected a string, got ${typeof text}`);
  assert.ok(text.toLowerCase().includes(expect), `${what}: '${text.slice(0, 200)}' lacks '${expect}'`);
  checks++;
}

async function formats(api, name) {
  const json = await api.create({ file: file(), model: 'whisper-1' });
  contains(json.text, `${name} json`);
  assert.equal(typeof json.hark.timings.total_ms, 'number');

  const verbose = await api.create({ file: file(), model: 'whisper-1', response_format: 'verbose_json' });
  contains(verbose.text, `${name} verbose_json`);
  assert.ok(verbose.segments.length > 0 && typeof verbose.duration === 'number' && verbose.language);
  for (const key of ['id', 'seek', 'start', 'end', 'text', 'tokens', 'temperature', 'avg_logprob',
                     'compression_ratio', 'no_speech_prob'])
    assert.ok(key in verbose.segments[0], `${name} verbose_json segment lacks ${key}`);

  const text = await api.create({ file: file(), model: 'whisper-1', response_format: 'text' });
  contains(text, `${name} text`);
  const srt = await api.create({ file: file(), model: 'whisper-1', response_format: 'srt' });
  assert.match(srt, /^1\n\d\d:\d\d:\d\d,\d\d\d --> \d\d:\d\d:\d\d,\d\d\d\n/);
  contains(srt, `${name} srt`);
  const vtt = await api.create({ file: file(), model: 'whisper-1', response_format: 'vtt' });
  assert.match(vtt, /^WEBVTT\n\n\d\d:\d\d:\d\d\.\d\d\d --> /);
  contains(vtt, `${name} vtt`);
}

async function main() {
  await formats(client.audio.transcriptions, 'transcriptions');
  await formats(client.audio.translations, 'translations');

  const words = await client.audio.transcriptions.create({
    file: file(), model: 'whisper-1', response_format: 'verbose_json', timestamp_granularities: ['word', 'segment'],
  });
  assert.ok(words.words.length > 0, 'timestamp_granularities=word gives top-level words');
  assert.ok(words.segments[0].words.length > 0, 'and words inside each segment');
  for (const w of words.words) assert.ok(w.end >= w.start && typeof w.word === 'string' && typeof w.probability === 'number');
  contains(words.words.map((w) => w.word).join(''), 'words');

  const stream = await client.audio.transcriptions.create({ file: file(), model: 'whisper-1', stream: true });
  const seen = [];
  let deltas = '';
  let done = null;
  for await (const event of stream) {
    seen.push(event.type);
    if (event.type === 'transcript.text.delta') deltas += event.delta;
    if (event.type === 'transcript.text.done') done = event;
  }
  assert.ok(seen.includes('transcript.text.delta'), `stream events: ${seen.join(',')}`);
  assert.equal(seen.at(-1), 'transcript.text.done');
  contains(done.text, 'stream done');
  assert.equal(deltas.trim(), done.text.trim(), 'deltas add up to the final text');

  // Non-standard fields ride along in the multipart body.
  const extra = await client.audio.transcriptions.create({
    file: file(), model: 'whisper-1', language: 'en', temperature: 0, beam_size: 2, condition_on_previous_text: false,
  });
  contains(extra.text, 'beam search');
  // Hints and VAD are reported (their effect on a toy model's text is not checked).
  const hinted = await client.audio.transcriptions.create({ file: file(), model: 'whisper-1', vocabulary: ['darkness'], vad: true });
  assert.deepEqual(hinted.hark.vocabulary.included.concat(hinted.hark.vocabulary.omitted), ['darkness']);
  assert.equal(hinted.hark.vad.speech, true);
  checks++;

  // Errors surface as SDK exceptions with hark's status and message.
  await assert.rejects(
    client.audio.transcriptions.create({ file: file(), model: 'whisper-1', temperature: -1 }),
    (e) => e.status === 400 && /temperature/.test(e.message));
  checks++;
  console.log(`openai SDK: ${checks} checks passed`);
}

main().catch((e) => {
  console.error('openai SDK test failed:', e);
  process.exit(1);
});
