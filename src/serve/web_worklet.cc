#include "serve/web_page.h"

namespace hark::serve {

// Runs on the browser's audio thread. The AudioContext runs at the device's rate
// (usually 48 or 44.1 kHz); this processor mixes to mono and resamples to 16 kHz with a
// windowed-sinc low-pass (Kaiser window, passband to 7.6 kHz, -80 dB from 8 kHz), so no
// browser resampler of unknown quality sits between the microphone and Whisper. The
// kernel is tabulated at 1/64 of an input sample and interpolated linearly, so any rate
// ratio costs about 2 x 290 taps per output sample (about 10 M multiply-adds a second). It
// posts 100 ms chunks of Float32 samples with their RMS level; a 'flush' message drains
// the filter's tail and answers {done: true}.
const char* web_worklet_js() {
  return R"js(const OUT_RATE = 16000;
const CHUNK = OUT_RATE / 10;
const PHASES = 64;

class HarkResampler extends AudioWorkletProcessor {
  constructor() {
    super();
    this.step = sampleRate / OUT_RATE;  // input samples per output sample
    this.passthrough = sampleRate === OUT_RATE;
    // Kaiser-windowed sinc: -80 dB stopband from the output Nyquist frequency down to
    // 95 % of it (7.6 kHz at 16 kHz), where Whisper's highest mel bands still listen.
    const nyquist = Math.min(sampleRate, OUT_RATE) / 2;
    const transition = 0.05 * nyquist / sampleRate;  // cycles per input sample
    const cutoff = nyquist / sampleRate - transition / 2;
    const beta = 0.1102 * (80 - 8.7);
    this.half = Math.ceil((80 - 8) / (2.285 * 2 * Math.PI * transition) / 2);
    const bessel0 = (x) => {
      let sum = 1, term = 1;
      for (let k = 1; k < 40; k++) { term *= (x / (2 * k)) ** 2; sum += term; }
      return sum;
    };
    const n = 2 * this.half * PHASES + 1;
    this.kernel = new Float32Array(n + 1);
    for (let i = 0; i < n; i++) {
      const x = i / PHASES - this.half;
      const sinc = x === 0 ? 2 * cutoff : Math.sin(2 * Math.PI * cutoff * x) / (Math.PI * x);
      const r = x / this.half;
      this.kernel[i] = sinc * bessel0(beta * Math.sqrt(Math.max(0, 1 - r * r))) / bessel0(beta);
    }
    this.buffer = new Float32Array(1 << 15);
    this.length = this.half;        // starts with half a kernel of silence as left context
    this.position = this.half;      // where the next output sample sits, in input samples
    this.chunk = new Float32Array(CHUNK);
    this.filled = 0;
    this.port.onmessage = (e) => { if (e.data === 'flush') this.flush(); };
  }

  append(samples) {
    if (this.length + samples.length > this.buffer.length) {
      const bigger = new Float32Array(2 * (this.length + samples.length));
      bigger.set(this.buffer.subarray(0, this.length));
      this.buffer = bigger;
    }
    this.buffer.set(samples, this.length);
    this.length += samples.length;
  }

  emit(value) {
    this.chunk[this.filled++] = value;
    if (this.filled === CHUNK) this.post();
  }

  post() {
    if (this.filled === 0) return;
    const samples = this.chunk.slice(0, this.filled);
    let energy = 0;
    for (const s of samples) energy += s * s;
    this.port.postMessage({samples, level: Math.sqrt(energy / samples.length)}, [samples.buffer]);
    this.filled = 0;
  }

  // Every output sample whose kernel fits in the buffer; keeps half a kernel of left context.
  resample() {
    const b = this.buffer, h = this.half, k = this.kernel;
    while (this.position < this.length - h) {
      const center = Math.floor(this.position);
      let sum = 0, norm = 0;
      for (let j = center - h + 1; j <= center + h; j++) {
        const at = (this.position - j + h) * PHASES;
        const i = Math.floor(at), f = at - i;
        const tap = k[i] + (k[i + 1] - k[i]) * f;
        sum += b[j] * tap;
        norm += tap;
      }
      this.emit(norm > 0 ? sum / norm : 0);
      this.position += this.step;
    }
    const drop = Math.max(0, Math.floor(this.position) - h);
    if (drop > 0) {
      b.copyWithin(0, drop, this.length);
      this.length -= drop;
      this.position -= drop;
    }
  }

  process(inputs) {
    const channels = inputs[0];
    if (!channels || channels.length === 0) return true;
    const mono = new Float32Array(channels[0].length);
    for (const c of channels) for (let i = 0; i < mono.length; i++) mono[i] += c[i] / channels.length;
    if (this.passthrough) {
      for (const s of mono) this.emit(s);
    } else {
      this.append(mono);
      this.resample();
    }
    return true;
  }

  flush() {
    if (!this.passthrough) {
      this.append(new Float32Array(this.half));  // the right context of the last samples
      this.resample();
    }
    this.post();
    this.port.postMessage({done: true});
  }
}

registerProcessor('hark-resampler', HarkResampler);
)js";
}

}  // namespace hark::serve
