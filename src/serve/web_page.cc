#include "serve/web_page.h"

namespace hark::serve {

// The page captures with an AudioContext at 16 kHz, so chunks are already in the
// session's raw format (audio/pcm;rate=16000, float32 little-endian) and need no decode.
const char* web_page_html() {
  return R"html(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>hark</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#222}
button#talk{font-size:1.3rem;padding:1.2rem 2rem;border-radius:2rem;border:0;background:#1f6feb;color:#fff;cursor:pointer;user-select:none}
button#talk.on{background:#d1242f}
#out{white-space:pre-wrap;border:1px solid #ccc;border-radius:.5rem;padding:1rem;min-height:6rem;margin-top:1rem}
#status{color:#666;font-size:.9rem;margin-top:.5rem}
label{display:block;margin-top:1rem}
</style></head><body>
<h1>hark</h1>
<p>Hold the button (or the space bar) and speak; release to get the transcript.</p>
<button id="talk">Hold to talk</button>
<div id="status">idle</div>
<div id="out"></div>
<label>Or transcribe a file: <input type="file" id="file" accept="audio/*,video/*"></label>
<label>Language (empty = detect): <input id="lang" size="6"></label>
<label>API key (only with --api-key): <input id="key" type="password" size="24"></label>
<script>
const $ = id => document.getElementById(id);
const status = t => $('status').textContent = t;
$('key').value = localStorage.getItem('hark-key') || '';
$('key').onchange = () => localStorage.setItem('hark-key', $('key').value);
function headers(extra) {
  const h = Object.assign({}, extra || {});
  if ($('key').value) h['Authorization'] = 'Bearer ' + $('key').value;
  return h;
}
async function call(path, init) {
  const r = await fetch(path, init);
  const body = r.status === 204 ? null : await r.json();
  if (!r.ok) throw new Error(body && body.error ? body.error.message : r.status);
  return body;
}
let ctx = null, node = null, stream = null, session = null, pending = [], sending = Promise.resolve();
let held = false, starting = false;  // a release during start-up stops once start-up is done
function flush() {
  if (!session || pending.length === 0) return;
  const n = pending.reduce((a, b) => a + b.length, 0), buf = new Float32Array(n);
  let o = 0; for (const p of pending) { buf.set(p, o); o += p.length; }
  pending = [];
  const id = session;
  // Chunks must arrive in order: chain each POST after the previous one.
  sending = sending.then(() => call('/v1/audio/sessions/' + id + '/audio',
    {method: 'POST', headers: headers({'Content-Type': 'audio/pcm;rate=16000'}), body: buf.buffer}))
    .then(r => { if (r.segments.length) $('out').textContent = r.segments.map(s => s.text).join(''); })
    .catch(e => status('error: ' + e.message));
}
async function start() {
  if (held || starting || session) return;
  held = starting = true;
  $('talk').classList.add('on'); status('listening…');
  try {
    const params = {language: $('lang').value || undefined};
    session = (await call('/v1/audio/sessions', {method: 'POST', headers: headers({'Content-Type': 'application/json'}),
                                                 body: JSON.stringify(params)})).id;
    stream = await navigator.mediaDevices.getUserMedia({audio: {channelCount: 1}});
    ctx = new AudioContext({sampleRate: 16000});
    const src = ctx.createMediaStreamSource(stream);
    node = ctx.createScriptProcessor(4096, 1, 1);
    node.onaudioprocess = e => pending.push(new Float32Array(e.inputBuffer.getChannelData(0)));
    src.connect(node); node.connect(ctx.destination);
    window.flushTimer = setInterval(flush, 500);
    starting = false;
    if (!held) stop();
  } catch (e) { status('error: ' + e.message); starting = held = false; stop(); }
}
async function stop() {
  held = false;
  if (starting) return;
  $('talk').classList.remove('on');
  clearInterval(window.flushTimer);
  if (node) node.disconnect();
  if (stream) stream.getTracks().forEach(t => t.stop());
  if (ctx) ctx.close();
  node = stream = ctx = null;
  if (!session) return;
  flush();
  const id = session; session = null;
  status('transcribing…');
  try {
    await sending;
    const r = await call('/v1/audio/sessions/' + id + '/finish', {method: 'POST', headers: headers()});
    $('out').textContent = r.text; status('done in ' + Math.round(r.hark.timings.total_ms) + ' ms');
  } catch (e) { status('error: ' + e.message); }
}
$('talk').addEventListener('pointerdown', start);
$('talk').addEventListener('pointerup', stop);
$('talk').addEventListener('pointerleave', () => { if (held) stop(); });
document.addEventListener('keydown', e => { if (e.code === 'Space' && !e.repeat && e.target.tagName !== 'INPUT') { e.preventDefault(); start(); } });
document.addEventListener('keyup', e => { if (e.code === 'Space' && e.target.tagName !== 'INPUT') { e.preventDefault(); stop(); } });
$('file').onchange = async () => {
  const f = $('file').files[0]; if (!f) return;
  const form = new FormData(); form.append('file', f); form.append('response_format', 'verbose_json');
  if ($('lang').value) form.append('language', $('lang').value);
  status('transcribing ' + f.name + '…');
  try {
    const r = await call('/v1/audio/transcriptions', {method: 'POST', headers: headers(), body: form});
    $('out').textContent = r.text; status(r.language + ', ' + r.duration.toFixed(1) + ' s of audio');
  } catch (e) { status('error: ' + e.message); }
};
</script></body></html>
)html";
}

}  // namespace hark::serve
