// The page at GET / in Debian's Chromium, headless, with Chromium's fake microphone
// playing a WAV file (it starts the file when the capture starts and loops it): hold the
// button for the clip's length, release, and the text inserted at the caret must be the
// one-shot transcription; the level meter and the partial text must have moved; the
// upload form must return an srt to download; the console must stay clean (no errors,
// no failed or 4xx/5xx requests). Leaves a screenshot. Run by tests/server/web_page.sh.
//
// Environment: HARK_URL (the server), HARK_MIC_WAV (the fake microphone), HARK_HOLD_MS,
// HARK_EXPECT (the one-shot text), HARK_SCREENSHOT (PNG path), HARK_CHROMIUM (default
// /usr/bin/chromium).
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
  let loudest = 0, partial = '';
  for (const end = Date.now() + holdMs; Date.now() < end;) {
    await page.waitForTimeout(100);
    loudest = Math.max(loudest, Number(await page.getAttribute('#meter', 'aria-valuenow')));
    partial = (await page.textContent('#partial')) || partial;
  }
  await page.mouse.up();
  await page.waitForFunction(() => !/^(Transcribing|Listening|Starting)/.test(document.getElementById('status').textContent),
                             null, {timeout: 60000});
  const status = await page.textContent('#status');
  const text = await page.inputValue('#text');
  check(status.startsWith('Inserted'), `status after release: '${status}'`);
  check(squash(text) === squash(`Before. ${expected} After.`),
        `text box: '${text}', expected the one-shot '${expected}' inserted at the caret`);
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
} finally {
  await context.close();
  fs.rmSync(profile, {recursive: true, force: true});
}
for (const p of problems) failures.push(p);
if (failures.length) {
  for (const f of failures) console.log(`FAILED: ${f}`);
  process.exit(1);
}
console.log(`PASSED: the page in Chromium (screenshot ${screenshot})`);
