// The page at GET / in Debian's Chromium, headless, with Chromium's fake microphone
// playing a WAV file (it starts the file when the capture starts and loops it): hold the
// button for the clip's length, release, and the text inserted at the caret must be the
// one-shot transcription (one word may differ: the capture is not the file); the level meter and the partial text must have moved; the
// upload form must return an srt to download; the console must stay clean (no errors,
// no failed or 4xx/5xx requests). Leaves a screenshot. Run by tests/server/web_page.sh.
//
// Then the messages, on a second server started with --api-key and a model that is not
// on disk: the page asks for the key, names `hark get` for the model, and says how to
// unblock a microphone that the browser's permissions deny.
//
// Environment: HARK_URL (the server), HARK_MIC_WAV (the fake microphone), HARK_HOLD_MS,
// HARK_EXPECT (the one-shot text), HARK_SCREENSHOT (PNG path), HARK_LOCKED_URL and
// HARK_LOCKED_KEY (the second server), HARK_CHROMIUM (default /usr/bin/chromium),
// HARK_DOC_SCREENSHOT (optional: where to save the picture of a take for docs/voice.md).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const env = (name, fallback) => {
  const v = process.env[name] ?? fallback;
  if (v === undefined) throw new Error(`${name} is not set`);
  return v;
};
const url = env('HARK_URL'), micWav = env('HARK_MIC_WAV'), holdMs = Number(env('HARK_HOLD_MS'));
const expected = env('HARK_EXPECT').trim(), screenshot = env('HARK_SCREENSHOT');
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); };
const squash = (s) => s.replace(/\s+/g, ' ').trim();
// Word-level edit distance (insertions, deletions, substitutions).
const wordEdits = (a, b) => {
  const x = a.split(' '), y = b.split(' ');
  let prev = Array.from({length: y.length + 1}, (_, j) => j);
  for (let i = 1; i <= x.length; ++i) {
    const cur = [i];
    for (let j = 1; j <= y.length; ++j)
      cur.push(Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x[i - 1] === y[j - 1] ? 0 : 1)));
    prev = cur;
  }
  return prev[y.length];
};

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'hark-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: env('HARK_CHROMIUM', '/usr/bin/chromium'),
  headless: true,
  viewport: {width: 820, height: 900},
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--use-fake-ui-for-media-stream',
         '--use-fake-device-for-media-stream', `--use-file-for-fake-audio-capture=${micWav}`],
});
const problems = [];
try {
  const page = context.pages()[0] || await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.url()}`); });

  await page.goto(url);
  await page.waitForFunction(() => document.getElementById('model').textContent.includes('model '));
  check(await page.getByRole('button', {name: 'Hold to talk'}).isVisible(), 'the talk button has an accessible name');
  check(await page.getByLabel('Text', {exact: true}).isVisible(), 'the text box has a label');
  check(await page.getByLabel('Result format').isVisible(), 'the format selector has a label');

  // Dictate into the middle of existing text.
  await page.getByLabel('Text', {exact: true}).fill('Before. After.');
  await page.evaluate(() => document.getElementById('text').setSelectionRange(8, 8));
  await page.getByRole('button', {name: 'Hold to talk'}).hover();
  await page.mouse.down();
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('Listening'),
                             null, {timeout: 30000});
  check(await page.getAttribute('#talk', 'aria-pressed') === 'true', 'aria-pressed is true while held');
  let loudest = 0, partial = '', pictured = !process.env.HARK_DOC_SCREENSHOT;
  for (const end = Date.now() + holdMs; Date.now() < end;) {
    await page.waitForTimeout(100);
    const level = Number(await page.getAttribute('#meter', 'aria-valuenow'));
    loudest = Math.max(loudest, level);
    partial = (await page.textContent('#partial')) || partial;
    const started = expected.split(' ').slice(0, 2).join(' ');
    if (!pictured && partial.startsWith(started) && level > 30) {  // docs/voice.md's picture: mid-take
      await page.screenshot({path: process.env.HARK_DOC_SCREENSHOT, clip: {x: 0, y: 0, width: 820, height: 560}});
      pictured = true;
    }
  }
  await page.mouse.up();
  await page.waitForFunction(() => !/^(Transcribing|Listening|Starting)/.test(document.getElementById('status').textContent),
                             null, {timeout: 60000});
  const status = await page.textContent('#status');
  const text = await page.inputValue('#text');
  check(status.startsWith('Inserted'), `status after release: '${status}'`);
  // The browser's capture is not the file: Chromium's fake microphone and the page's own
  // resampling change the samples, and a loaded machine can drop a capture buffer, which
  // can flip one word of the toy model's reading (seen once in six local runs, with the tests
  // running two at a time). One word may differ; the caret placement must be exact.
  const inserted = squash(text), want = squash(`Before. ${expected} After.`);
  const differing = wordEdits(inserted, want);
  check(inserted.startsWith('Before. ') && inserted.endsWith(' After.') && differing <= 1,
        `text box: '${text}', expected the one-shot '${expected}' inserted at the caret (${differing} words differ)`);
  if (differing === 1) console.log(`note: one word differs from the one-shot (the capture is not the file)`);
  check(loudest > 20, `the level meter peaked at ${loudest} %`);
  check(partial.length > 0, 'partial text was shown while holding');
  check(await page.getAttribute('#talk', 'aria-pressed') === 'false', 'aria-pressed is false after release');
  console.log(`dictated: '${squash(text)}' (meter peak ${loudest} %, last partial '${partial}')`);

  // One-shot upload, srt, downloaded.
  await page.getByLabel('Audio or video file').setInputFiles(micWav);
  await page.getByLabel('Result format').selectOption('srt');
  await page.getByRole('button', {name: 'Transcribe'}).click();
  await page.getByRole('link', {name: /^Download /}).waitFor({timeout: 60000});
  const [download] = await Promise.all([page.waitForEvent('download'),
                                        page.getByRole('link', {name: /^Download /}).click()]);
  const srt = fs.readFileSync(await download.path(), 'utf8');
  check(download.suggestedFilename().endsWith('.srt'), `download name ${download.suggestedFilename()}`);
  check(/^1\r?\n\d\d:\d\d:\d\d,\d\d\d --> \d\d:\d\d:\d\d,\d\d\d/.test(srt), `srt body: ${srt.slice(0, 200)}`);
  const cueText = srt.split(/\r?\n/).filter((l) => l && !/^\d+$/.test(l) && !l.includes('-->')).join(' ');
  check(squash(cueText) === squash(expected), `srt cues say '${squash(cueText)}', expected '${expected}'`);

  await page.evaluate(() => window.scrollTo(0, 0));
  fs.mkdirSync(path.dirname(screenshot), {recursive: true});
  await page.screenshot({path: screenshot, fullPage: true});

  if (process.env.HARK_LOCKED_URL) await checkMessages(process.env.HARK_LOCKED_URL, env('HARK_LOCKED_KEY'));
} finally {
  await context.close();
  fs.rmSync(profile, {recursive: true, force: true});
}
for (const p of problems) failures.push(p);

async function statusMatching(page, pattern) {
  try {
    await page.waitForFunction((re) => new RegExp(re).test(document.getElementById('status').textContent),
                               pattern.source, {timeout: 15000});
  } catch (e) {
    return `status is '${await page.textContent('#status')}'`;
  }
  return '';
}

// Expected 401 and 503 answers here; the console checks cover the first page only.
async function checkMessages(lockedUrl, key) {
  const page = await context.newPage();
  await page.goto(lockedUrl);
  let why = await statusMatching(page, /needs an API key: type it in Settings/);
  check(!why, `API key message on load: ${why}`);
  check(await page.evaluate(() => document.activeElement.id) === 'key', 'the key box has the focus');
  await page.getByLabel(/^API key/).fill(key);
  await page.getByLabel(/^API key/).press('Tab');  // 'change' checks the server again
  why = await statusMatching(page, /^Ready\.$/);
  check(!why, `the key is accepted: ${why}`);

  await page.getByRole('button', {name: 'Hold to talk'}).hover();
  await page.mouse.down();
  why = await statusMatching(page, /cannot transcribe: .*hark get tiny/);
  check(!why, `missing model message: ${why}`);
  await page.mouse.up();

  // --use-fake-ui-for-media-stream grants every request, and that wins over a denied
  // permission; so the denial is what Chromium's getUserMedia answers then.
  await page.evaluate(() => {
    navigator.mediaDevices.getUserMedia = () => Promise.reject(new DOMException('Permission denied', 'NotAllowedError'));
  });
  await page.mouse.down();
  why = await statusMatching(page, /microphone is blocked for this page: allow it/);
  check(!why, `denied microphone message: ${why}`);
  await page.mouse.up();
  check(await page.getAttribute('#talk', 'aria-pressed') === 'false', 'the button is released after an error');
  await page.close();
}
if (failures.length) {
  for (const f of failures) console.log(`FAILED: ${f}`);
  process.exit(1);
}
console.log(`PASSED: the page in Chromium (screenshot ${screenshot})`);
