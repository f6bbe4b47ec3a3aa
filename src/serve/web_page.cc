#include "serve/web_page.h"

namespace hark::serve {

// The page asks for the microphone with the browser's echo cancellation, noise
// suppression and automatic gain control off (a switch turns them on): they are tuned
// for calls and distort what Whisper hears. Audio is captured at the device's rate and
// resampled to 16 kHz by the worklet at /audio-worklet.js, then posted to a session as
// raw float32 (audio/pcm;rate=16000) every half second while the button is held, with a
// preview of the unfinished text once a second. On release the transcript is inserted
// at the caret of the text box.
const char* web_page_html() {
  return R"html(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>hark</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Ccircle cx='8' cy='8' r='7' fill='%231f6feb'/%3E%3C/svg%3E">
<style>
body{font-family:system-ui,sans-serif;max-width:46rem;margin:1.5rem auto;padding:0 1rem;color:#1f2328;line-height:1.4}
h1{margin:0 0 .2rem}h2{font-size:1.1rem;margin:1.6rem 0 .6rem}
.sub{color:#59636e;margin:0}
#talk{font-size:1.2rem;padding:1rem 1.8rem;border-radius:2rem;border:0;background:#1f6feb;color:#fff;cursor:pointer;
  user-select:none;-webkit-user-select:none;touch-action:none}
#talk[aria-pressed=true]{background:#cf222e}
#talk:focus-visible{outline:3px solid #9a6700;outline-offset:2px}
.row{display:flex;gap:1rem;align-items:center;flex-wrap:wrap}
#meter{width:10rem;height:.6rem;background:#eaeef2;border-radius:.3rem;overflow:hidden}
#level{height:100%;width:0;background:#1a7f37;transition:width .08s}
#partial{color:#59636e;font-style:italic;min-height:1.4em;margin:.5rem 0}
textarea,pre{width:100%;box-sizing:border-box;font:inherit;border:1px solid #d0d7de;border-radius:.4rem;padding:.6rem}
pre{white-space:pre-wrap;min-height:3rem;max-height:16rem;overflow:auto;font-family:ui-monospace,monospace;font-size:.85rem}
label{display:block;margin:.6rem 0 .2rem}label.inline{display:inline}
#status{padding:.5rem .7rem;border-radius:.4rem;background:#f6f8fa}
#status.error{background:#ffebe9;color:#82071e}
</style></head><body>
<main>
<h1>hark</h1>
<p class="sub" id="model">Whisper speech-to-text on this machine.</p>
<p id="status" role="status" aria-live="polite">Ready.</p>

<section aria-labelledby="dictate-heading">
<h2 id="dictate-heading">Dictate</h2>
<p id="talk-help">Hold the button, or the space bar outside text fields, and speak. Release to insert the text at the cursor in the box below.</p>
<div class="row">
<button id="talk" type="button" aria-pressed="false" aria-describedby="talk-help">Hold to talk</button>
<div id="meter" role="meter" aria-label="Microphone level" aria-valuemin="0" aria-valuemax="100" aria-valuenow="0"><div id="level"></div></div>
</div>
<p id="partial" aria-live="polite" aria-label="Partial text"></p>
<label for="text">Text</label>
<textarea id="text" rows="6" spellcheck="true"></textarea>
<label for="language">Language (empty: detect)</label>
<input id="language" size="8" placeholder="en, de, …" autocomplete="off">
<label><input type="checkbox" id="processing"> Browser audio processing (echo cancellation, noise suppression, automatic gain). Off gives Whisper the microphone's own signal; turn it on for a speakerphone.</label>
</section>

<section aria-labelledby="file-heading">
<h2 id="file-heading">Transcribe a file</h2>
<form id="upload">
<label for="file">Audio or video file</label>
<input type="file" id="file" name="file" accept="audio/*,video/*" required>
<label for="format">Result format</label>
<select id="format" name="response_format">
<option value="text">text</option><option value="json">json</option><option value="verbose_json">verbose_json</option>
<option value="srt">srt (subtitles)</option><option value="vtt">vtt (web subtitles)</option>
</select>
<p><button type="submit" id="transcribe">Transcribe</button> <a id="download" href="#" hidden>Download the result</a></p>
</form>
<pre id="result" tabindex="0" aria-label="Transcription result" aria-live="polite"></pre>
</section>

<section aria-labelledby="settings-heading">
<h2 id="settings-heading">Settings</h2>
<form id="settings" autocomplete="off">
<label for="key">API key (only when <code>hark serve</code> was started with <code>--api-key</code>)</label>
<input id="key" type="password" size="30" autocomplete="off">
</form>
</section>
</main>
<script>
'use strict';
const $ = (id) => document.getElementById(id);
const text = $('text'), talk = $('talk');
$('key').value = localStorage.getItem('hark-key') || '';
$('settings').addEventListener('submit', (e) => e.preventDefault());
$('key').addEventListener('change', () => { localStorage.setItem('hark-key', $('key').value); checkServer(); });

function status(message, isError) {
  $('status').textContent = message;
  $('status').className = isError ? 'error' : '';
}

// An error that carries what the user should do.
class Problem extends Error {}

async function api(path, init) {
  init = init || {};
  const headers = Object.assign({}, init.headers || {});
  if ($('key').value) headers['Authorization'] = 'Bearer ' + $('key').value;
  let r;
  try {
    r = await fetch(path, Object.assign({}, init, {headers}));
  } catch (e) {
    throw new Problem('Cannot reach the hark server. Is `hark serve` still running?');
  }
  if (r.ok) return r;
  let message = 'HTTP ' + r.status, code = '';
  try { const body = await r.json(); message = body.error.message; code = body.error.code; } catch (e) {}
  if (r.status === 401) {
    $('key').focus();
    throw new Problem($('key').value
      ? 'The server rejected this API key: check the key in Settings.'
      : 'This server needs an API key: type it in Settings below (the one `hark serve` was started with).');
  }
  if (r.status === 503) throw new Problem('The server cannot transcribe: ' + message);
  throw new Problem(message);
}
const json = async (path, init) => (await api(path, init)).json();

async function checkServer() {
  try {
    const info = await json('/v1');
    $('model').textContent = 'Whisper speech-to-text on this machine, model ' + info.model.split('/').pop() + '.';
    if ($('status').className === 'error') status('Ready.');
  } catch (e) { status(e.message, true); }
}

function micProblem(e) {
  if (!window.isSecureContext || !navigator.mediaDevices)
    return 'Browsers allow the microphone only on https:// pages or http://localhost: open hark at http://localhost:PORT, or serve it over https.';
  if (e.name === 'NotAllowedError' || e.name === 'SecurityError')
    return 'The microphone is blocked for this page: allow it in the browser (the icon in the address bar) and try again.';
  if (e.name === 'NotFoundError' || e.name === 'OverconstrainedError')
    return 'No microphone was found: connect one and try again, or transcribe a file below.';
  if (e.name === 'NotReadableError')
    return 'The microphone could not be started: another program may be using it.';
  return 'The microphone failed: ' + e.message;
}

// --- Dictation -----------------------------------------------------------------------
let context = null;  // an AudioContext at the microphone's own rate, so the browser does not resample
let take = null;     // the take in progress

async function audioContext(stream) {
  const rate = stream.getAudioTracks()[0].getSettings().sampleRate;
  if (context && rate && context.sampleRate !== rate) {
    context.close();
    context = null;
  }
  if (!context) {
    context = rate ? new AudioContext({sampleRate: rate}) : new AudioContext();
    await context.audioWorklet.addModule('/audio-worklet.js');
  }
  if (context.state === 'suspended') await context.resume();
  return context;
}

function showLevel(rms) {
  const percent = Math.max(0, Math.min(100, Math.round((20 * Math.log10(rms + 1e-9) + 60) / 60 * 100)));
  $('level').style.width = percent + '%';
  $('meter').setAttribute('aria-valuenow', String(percent));
}

function setRecording(on) {
  talk.setAttribute('aria-pressed', on ? 'true' : 'false');
  talk.textContent = on ? 'Release to stop' : 'Hold to talk';
  if (!on) showLevel(0);
}

function openSession() {
  const params = {};
  if ($('language').value.trim()) params.language = $('language').value.trim();
  return json('/v1/audio/sessions', {method: 'POST', headers: {'Content-Type': 'application/json'},
                                     body: JSON.stringify(params)}).then((s) => s.id);
}

// Chunks go up in order, one request at a time; every second one asks for a preview.
function send(t, last) {
  if (t.pending.length === 0) return;
  const n = t.pending.reduce((a, p) => a + p.length, 0), samples = new Float32Array(n);
  let at = 0;
  for (const p of t.pending) { samples.set(p, at); at += p.length; }
  t.pending = [];
  t.pendingSamples = 0;
  const preview = !last && performance.now() - t.previewAt >= 1000;
  if (preview) t.previewAt = performance.now();
  t.queue = t.queue.then(async () => {
    const id = await t.session;
    const r = await json('/v1/audio/sessions/' + id + '/audio' + (preview ? '?partial=1' : ''),
                         {method: 'POST', headers: {'Content-Type': 'audio/pcm;rate=16000'}, body: samples.buffer});
    const done = r.segments.map((s) => s.text).join('');
    if (preview) t.partial = r.partial;
    if (take === t && !t.stopped) $('partial').textContent = (done + t.partial).trim();
  });
}

function onAudio(t, message) {
  if (message.done) { if (t.drained) t.drained(); return; }
  showLevel(message.level);
  t.samples += message.samples.length;
  t.pending.push(message.samples);
  t.pendingSamples += message.samples.length;
  if (t.pendingSamples >= 8000) send(t, false);
}

async function start() {
  if (take) return;
  const t = take = {stopped: false, samples: 0, pending: [], pendingSamples: 0, partial: '', previewAt: 0,
                    queue: Promise.resolve(), selection: [text.selectionStart, text.selectionEnd]};
  setRecording(true);
  $('partial').textContent = '';
  status('Starting the microphone…');
  t.session = openSession();
  t.session.catch(() => {});
  try {
    const processing = $('processing').checked;
    t.stream = await navigator.mediaDevices.getUserMedia({audio: {channelCount: 1, echoCancellation: processing,
                                                                  noiseSuppression: processing, autoGainControl: processing}});
  } catch (e) {
    return abandon(t, new Problem(micProblem(e)));
  }
  try {
    const c = await audioContext(t.stream);
    t.source = c.createMediaStreamSource(t.stream);
    t.node = new AudioWorkletNode(c, 'hark-resampler', {numberOfInputs: 1, numberOfOutputs: 1});
    t.node.port.onmessage = (e) => onAudio(t, e.data);
    t.source.connect(t.node);
    t.node.connect(c.destination);  // the worklet writes silence; the connection keeps it running
    await t.session;
  } catch (e) {
    return abandon(t, e);
  }
  if (t.stopped) return finish(t);
  status('Listening… release to stop.');
}

function releaseMicrophone(t) {
  if (t.source) t.source.disconnect();
  if (t.node) t.node.disconnect();
  if (t.stream) t.stream.getTracks().forEach((track) => track.stop());
}

function abandon(t, error) {
  releaseMicrophone(t);
  t.session.then((id) => api('/v1/audio/sessions/' + id, {method: 'DELETE'})).catch(() => {});
  take = null;
  setRecording(false);
  status(error.message, true);
}

function stop() {
  const t = take;
  if (!t || t.stopped) return;
  t.stopped = true;
  setRecording(false);
  if (t.node) finish(t);  // otherwise start() finishes once the microphone is up
}

async function finish(t) {
  status('Transcribing…');
  await new Promise((resolve) => {
    t.drained = resolve;
    t.node.port.postMessage('flush');
    setTimeout(resolve, 1000);
  });
  releaseMicrophone(t);
  if (t.samples < 1600) return abandon(t, new Problem('Too short: hold the button while you speak.'));
  send(t, true);
  try {
    await t.queue;
    const id = await t.session;
    const r = await json('/v1/audio/sessions/' + id + '/finish', {method: 'POST'});
    insertAtCaret(r.text.trim(), t.selection);
    $('partial').textContent = '';
    status(r.text.trim() ? 'Inserted ' + r.hark.duration.toFixed(1) + ' s of speech (' + r.hark.language + ').' : 'No speech heard.');
  } catch (e) {
    status(e.message, true);
  } finally {
    take = null;
  }
}

function insertAtCaret(words, selection) {
  if (!words) return;
  let [start, end] = selection;
  if (start == null) start = end = text.value.length;
  const before = text.value.slice(0, start), after = text.value.slice(end);
  const lead = before && !/\s$/.test(before) ? ' ' : '';
  const trail = after && !/^\s/.test(after) ? ' ' : '';
  text.setRangeText(lead + words + trail, start, end, 'end');
  text.focus();
}

talk.addEventListener('pointerdown', (e) => {
  if (e.button !== 0) return;
  talk.setPointerCapture(e.pointerId);  // a release outside the button still stops
  start();
});
talk.addEventListener('pointerup', stop);
talk.addEventListener('pointercancel', stop);
talk.addEventListener('contextmenu', (e) => e.preventDefault());  // long-press on touch screens
talk.addEventListener('keydown', (e) => { if (e.key === 'Enter' && !e.repeat) { e.preventDefault(); take ? stop() : start(); } });
const typing = (el) => el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName);
document.addEventListener('keydown', (e) => {
  if (e.code !== 'Space' || typing(e.target)) return;
  e.preventDefault();
  if (!e.repeat) start();
});
document.addEventListener('keyup', (e) => {
  if (e.code !== 'Space' || typing(e.target)) return;
  e.preventDefault();
  stop();
});

// --- File upload ---------------------------------------------------------------------
const extensions = {text: 'txt', json: 'json', verbose_json: 'json', srt: 'srt', vtt: 'vtt'};
let downloadUrl = null;
$('upload').addEventListener('submit', async (e) => {
  e.preventDefault();
  const file = $('file').files[0];
  if (!file) return;
  const format = $('format').value;
  const form = new FormData();
  form.append('file', file);
  form.append('response_format', format);
  if ($('language').value.trim()) form.append('language', $('language').value.trim());
  $('transcribe').disabled = true;
  $('download').hidden = true;
  status('Transcribing ' + file.name + '…');
  try {
    const r = await api('/v1/audio/transcriptions', {method: 'POST', body: form});
    let body = await r.text();
    if (format.endsWith('json')) body = JSON.stringify(JSON.parse(body), null, 2);
    $('result').textContent = body;
    if (downloadUrl) URL.revokeObjectURL(downloadUrl);
    downloadUrl = URL.createObjectURL(new Blob([body], {type: r.headers.get('Content-Type') || 'text/plain'}));
    const link = $('download');
    link.href = downloadUrl;
    link.download = file.name.replace(/\.[^.]*$/, '') + '.' + extensions[format];
    link.textContent = 'Download ' + link.download;
    link.hidden = false;
    status('Transcribed ' + file.name + ' (language: ' + (r.headers.get('x-hark-language') || '?') + ').');
  } catch (err) {
    status(err.message, true);
  } finally {
    $('transcribe').disabled = false;
  }
});

checkServer();
</script></body></html>
)html";
}

}  // namespace hark::serve
