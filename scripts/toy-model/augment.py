"""Acoustic variety for synthesized clips, in numpy only (runs in the synthesis workers on
the GPU machine's CPU cores and on the development machine): voice-shape perturbation
(vocal-tract length: formants moved up or down by a factor, pitch and timing kept, with a
mild random tone curve), room reverberation, telephone channel (8 kHz, 300-3400 Hz,
G.711 mu-law), Opus and MP3 round trips (libopus, libmp3lame and libmpg123 through
ctypes: the Debian 12 libraries carried in .device-carry/debs with espeak-ng), coloured
noise at a given SNR.

Every effect keeps the clip's length and timing (codec delays are measured and removed),
so utterance and word boundaries stay valid. `draw_effects` picks a chain for a clip,
`apply` runs it; `CHAIN_SHARES` says how often each effect is used. The voice-shape
perturbation ("vtlp") is chosen apart from the chain, from the clip's seed
(`vtlp_chosen`, share `VTLP_SHARE`, train.py --vtlp-share), and runs first.

  /usr/bin/python3 scripts/toy-model/augment.py     # self-check of every effect
"""
import ctypes
import ctypes.util
import os
import random

import numpy as np

RATE = 16000
# Share of training clips that get each effect (independently drawn; most get none or one).
CHAIN_SHARES = {"reverb": 0.20, "telephone": 0.08, "opus": 0.08, "mp3": 0.06}
# Voice-shape perturbation of training clips (never held-out ones): share of clips, the
# range of the warp factor alpha (formant frequencies times alpha below VTLP_BREAK_HZ), and
# the depth of the random tone curve (dB at each of VTLP_TONE_HZ, as espeak-ng variants'
# "tone" lines shape their voices).
VTLP_SHARE = 0.5
VTLP_ALPHA = (0.85, 1.15)
VTLP_BREAK_HZ = 4800.0
VTLP_TONE_DB = 6.0
VTLP_TONE_HZ = (300.0, 700.0, 1500.0, 3000.0, 6000.0)


def rms(x):
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if len(x) else 0.0


def fft_convolve(x, h):
    n = len(x) + len(h) - 1
    size = 1 << (n - 1).bit_length()
    return np.fft.irfft(np.fft.rfft(x, size) * np.fft.rfft(h, size), size)[:n]


def _frames(x, n_fft, hop):
    """Hann-windowed frames of x padded by n_fft on each side (every sample is covered by
    n_fft / hop frames), their padded length and the window."""
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)  # periodic Hann
    total = len(x) + 2 * n_fft
    total += (-total) % hop
    padded = np.zeros(total)
    padded[n_fft: n_fft + len(x)] = x
    frames = np.lib.stride_tricks.sliding_window_view(padded, n_fft)[::hop]
    return frames * window, total, window


def _overlap_add(frames, total, window, hop):
    """Weighted overlap-add of frames made by _frames, divided by the summed squared
    window: an unmodified spectrum gives the input back exactly."""
    n_fft = frames.shape[1]
    out = np.zeros(total)
    norm = np.zeros(total)
    rows, cols = out.reshape(-1, hop), norm.reshape(-1, hop)
    weighted = frames * window
    for r in range(n_fft // hop):
        rows[r: r + len(frames)] += weighted[:, r * hop:(r + 1) * hop]
        cols[r: r + len(frames)] += (window * window)[r * hop:(r + 1) * hop]
    return out / np.maximum(norm, 1e-9)


def warp_source_hz(f, alpha, break_hz=VTLP_BREAK_HZ, nyquist=RATE / 2.0):
    """For output frequencies f, the input frequency whose envelope moves there: a
    piecewise-linear warp (Jaitly & Hinton's VTLP) that scales by alpha below the break
    and keeps the Nyquist frequency in place above it."""
    knee = break_hz * min(alpha, 1.0) / alpha  # input frequency of the break
    low = f / alpha
    high = knee + (f - alpha * knee) * (nyquist - knee) / (nyquist - alpha * knee)
    return np.where(f <= alpha * knee, low, high)


def tone_curve_db(f, gains_db, points_hz=VTLP_TONE_HZ):
    """A smooth gain curve (dB) through gains_db at points_hz, linear in log frequency,
    flat beyond the first and last point."""
    return np.interp(np.log(np.maximum(f, 1.0)), np.log(points_hz), gains_db)


def _lpc(autocorr, order):
    """Prediction polynomials (frames x order+1, a[:, 0] = 1) from autocorrelations
    (frames x order+1) by the Levinson-Durbin recursion, all frames at once."""
    frames = autocorr.shape[0]
    a = np.zeros((frames, order + 1))
    a[:, 0] = 1.0
    err = autocorr[:, 0].copy()
    for i in range(1, order + 1):
        acc = np.einsum("fj,fj->f", a[:, :i], autocorr[:, i:0:-1])
        k = -acc / err
        a[:, 1: i + 1] = a[:, 1: i + 1] + k[:, None] * a[:, i - 1::-1][:, :i]
        err = err * (1.0 - k * k)
    return a


def _inverse_envelope(a, omega):
    """|A(e^{j omega})|^2 for each frame's polynomial a: the inverse of the LPC power
    envelope (up to the gain, which cancels in a ratio)."""
    k = np.arange(a.shape[1])[:, None] * omega[None, :]
    re, im = a @ np.cos(k).astype(np.float32), a @ np.sin(k).astype(np.float32)
    return re * re + im * im + np.float32(1e-12)


def _autocorr_rows(n_fft, order):
    """power spectrum (frames x n_fft/2+1) @ this = the frames' first order+1 (circular)
    autocorrelation lags: the inverse real FFT's terms, only those needed."""
    bins = np.arange(n_fft // 2 + 1)
    weight = np.full(len(bins), 2.0)
    weight[0] = weight[-1] = 1.0  # the bins the one-sided spectrum holds once
    return weight[:, None] * np.cos(2 * np.pi * np.outer(bins, np.arange(order + 1)) / n_fft) / n_fft


def vtlp(x, alpha, tone_db=None, n_fft=512, hop=256, order=18, max_gain_db=24.0, lag_hz=40.0):
    """Voice-shape perturbation with pitch and timing kept: each 32 ms frame's spectral
    envelope (an all-pole fit of `order` poles, which follows the formant peaks) is warped
    along frequency by `warp_source_hz` (alpha > 1 moves the formants up, as for a shorter
    vocal tract, alpha < 1 down), and the frame is multiplied by the warped envelope over
    the original one (and by the tone curve, `tone_db` dB at VTLP_TONE_HZ), the gain held
    within +-max_gain_db. The harmonics stay where they are; only their weights change.
    Zero-phase gains and normalised overlap-add: same length, no delay, and alpha 1 with
    no tone curve gives the input back. Output level = input level."""
    x = np.asarray(x, dtype=np.float32)
    if len(x) < 4:
        return x.copy()
    frames, total, window = _frames(x, n_fft, hop)
    spec = np.fft.rfft(frames, axis=1)
    f = np.fft.rfftfreq(n_fft, 1.0 / RATE)
    src = warp_source_hz(f, alpha)
    # The fit is made on the pre-emphasised spectrum (1 - 0.97/z: speech falls ~12 dB per
    # octave, and an all-pole fit of the raw spectrum spends its poles on that tilt and
    # misses the weak upper formants); the emphasis is divided out of the gain again.
    emphasis = lambda hz: 1.0 + 0.97 ** 2 - 2 * 0.97 * np.cos(2 * np.pi * hz / RATE)  # noqa: E731
    power = (spec.real ** 2 + spec.imag ** 2) * emphasis(f)
    autocorr = power @ _autocorr_rows(n_fft, order)
    autocorr[:, 0] = autocorr[:, 0] * (1.0 + 1e-4) + 1e-12 * max(1e-12, float(autocorr[:, 0].max()))
    autocorr *= np.exp(-0.5 * (2 * np.pi * lag_hz / RATE * np.arange(order + 1)) ** 2)  # lag window: wider peaks
    a = _lpc(autocorr, order).astype(np.float32)
    # envelope at the source frequency over the envelope here, in amplitude (half the log power)
    log_gain = 0.5 * np.log(_inverse_envelope(a, 2 * np.pi * f / RATE)
                            / _inverse_envelope(a, 2 * np.pi * src / RATE)
                            * (emphasis(f) / np.maximum(emphasis(src), 1e-9)).astype(np.float32))
    if tone_db is not None:
        log_gain += (tone_curve_db(f, tone_db) * (np.log(10.0) / 20.0)).astype(np.float32)
    limit = max_gain_db * np.log(10.0) / 20.0
    gain = np.exp(np.clip(log_gain, -limit, limit))
    y = _overlap_add(np.fft.irfft(spec * gain, n_fft, axis=1), total, window, hop)[n_fft: n_fft + len(x)]
    return (y * (rms(x) / max(1e-12, rms(y)))).astype(np.float32)


def vtlp_params(seed):
    """(alpha, tone curve in dB) of the voice-shape perturbation of the clip with this
    seed: alpha uniform in VTLP_ALPHA, each tone point uniform in +-VTLP_TONE_DB. Drawn
    from the seed alone, so the plan (vtlp_chosen) and the worker (apply) agree and the
    other effects' parameters do not change."""
    r = random.Random(f"vtlp-params-{seed}")
    alpha = r.uniform(*VTLP_ALPHA)
    return alpha, [r.uniform(-VTLP_TONE_DB, VTLP_TONE_DB) for _ in VTLP_TONE_HZ]


def vtlp_chosen(seed, share=VTLP_SHARE):
    """Whether the clip with this seed gets the voice-shape perturbation (a share of the
    seeds; independent of the other effects' draws, so plans keep their voices)."""
    return share > 0 and random.Random(f"vtlp-pick-{seed}").random() < share


def reverb(x, rng, rt60=None, wet=None):
    """Exponentially decaying noise room response (RT60 0.15-0.7 s) after a direct path,
    mixed 15-50 % wet; output as long as the input, level kept."""
    rt60 = rt60 if rt60 is not None else rng.uniform(0.15, 0.7)
    wet = wet if wet is not None else rng.uniform(0.15, 0.5)
    n = int(rt60 * RATE)
    t = np.arange(n) / RATE
    h = rng.standard_normal(n) * np.exp(-6.9 * t / rt60)
    h[: int(0.003 * RATE)] = 0.0  # first reflections arrive a few ms after the direct sound
    h /= max(1e-9, np.sqrt(np.sum(h * h)))
    y = (1.0 - wet) * x + wet * fft_convolve(x, h)[: len(x)]
    return (y * (rms(x) / max(1e-9, rms(y)))).astype(np.float32)


def _resample_fft(x, n_out):
    """Band-limited resampling by truncating / zero-padding the spectrum."""
    spec = np.fft.rfft(x)
    out = np.zeros(n_out // 2 + 1, dtype=complex)
    k = min(len(spec), len(out))
    out[:k] = spec[:k]
    return np.fft.irfft(out, n_out) * (n_out / len(x))


def mulaw(x, bits=8):
    """G.711-style mu-law quantisation (mu = 255) of x in [-1, 1]."""
    mu = 255.0
    y = np.sign(x) * np.log1p(mu * np.minimum(np.abs(x), 1.0)) / np.log1p(mu)
    levels = 2 ** (bits - 1)
    y = np.round(y * levels) / levels
    return np.sign(y) * np.expm1(np.abs(y) * np.log1p(mu)) / mu


def telephone(x, rng=None):
    """8 kHz narrow-band channel: 300-3400 Hz band pass, mu-law at 8 kHz, back to 16 kHz."""
    if len(x) < 4:
        return x.astype(np.float32)
    spec = np.fft.rfft(x)
    f = np.fft.rfftfreq(len(x), 1.0 / RATE)
    gain = np.clip((f - 250.0) / 100.0, 0, 1) * np.clip((3500.0 - f) / 200.0, 0, 1)
    band = np.fft.irfft(spec * gain, len(x))
    peak = max(1e-9, float(np.abs(band).max()))
    narrow = _resample_fft(band / peak * 0.7, len(x) // 2)
    wide = _resample_fft(mulaw(narrow), len(x))
    return (wide / 0.7 * peak).astype(np.float32)


def align(reference, degraded, max_lag=4000):
    """degraded shifted so it lines up with reference (codec delay removed), same length."""
    n = len(reference)
    size = 1 << (n + len(degraded)).bit_length()
    corr = np.fft.irfft(np.fft.rfft(degraded, size) * np.conj(np.fft.rfft(reference, size)), size)
    lags = np.concatenate([corr[: max_lag + 1], corr[-max_lag:]])
    lag = int(np.argmax(lags))
    lag = lag if lag <= max_lag else lag - len(lags)
    out = np.zeros(n, np.float32)
    src = degraded[max(0, lag):]
    dst = out[max(0, -lag):]
    k = min(len(src), len(dst))
    dst[:k] = src[:k]
    return out, lag


class _Libs:
    """Codec libraries: first from the folders of ESPEAK_LD_PATH (the carried Debian 12
    libraries; by full path, so the main process finds them too, whose library path
    stays the machine's own), then the system's."""
    cache = {}

    @classmethod
    def get(cls, name):
        if name not in cls.cache:
            folders = [d for d in os.environ.get("ESPEAK_LD_PATH", "").split(":") if d]
            candidates = [os.path.join(d, f"lib{name}.so.0") for d in folders]
            candidates += [ctypes.util.find_library(name) or f"lib{name}.so.0"]
            cls.cache[name] = None
            for path in candidates:
                try:
                    cls.cache[name] = ctypes.CDLL(path)
                    break
                except OSError:
                    continue
        return cls.cache[name]


def opus_roundtrip(x, bitrate=16000):
    """Encodes and decodes with libopus (VOIP mode, 20 ms frames, 16 kHz); None when the
    library is missing."""
    lib = _Libs.get("opus")
    if lib is None:
        return None
    err = ctypes.c_int()
    lib.opus_encoder_create.restype = lib.opus_decoder_create.restype = ctypes.c_void_p
    enc = lib.opus_encoder_create(RATE, 1, 2048, ctypes.byref(err))
    dec = lib.opus_decoder_create(RATE, 1, ctypes.byref(err))
    if not enc or not dec:
        return None
    try:
        lib.opus_encoder_ctl(ctypes.c_void_p(enc), 4002, ctypes.c_int(int(bitrate)))  # OPUS_SET_BITRATE
        frame = RATE // 50
        padded = np.concatenate([x, np.zeros(frame * 2 - len(x) % frame, np.float32)]).astype(np.float32)
        out, packet, pcm = [], (ctypes.c_ubyte * 1500)(), (ctypes.c_float * frame)()
        for i in range(0, len(padded), frame):
            chunk = np.ascontiguousarray(padded[i:i + frame])
            n = lib.opus_encode_float(ctypes.c_void_p(enc), chunk.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                      frame, packet, 1500)
            if n < 0:
                return None
            got = lib.opus_decode_float(ctypes.c_void_p(dec), packet, n, pcm, frame, 0)
            out.append(np.ctypeslib.as_array(pcm)[: max(0, got)].copy())
        y = np.concatenate(out)
    finally:
        lib.opus_encoder_destroy(ctypes.c_void_p(enc))
        lib.opus_decoder_destroy(ctypes.c_void_p(dec))
    return align(x, y)[0]


def mp3_roundtrip(x, kbps=32):
    """Encodes with libmp3lame (MPEG-2 layer III, mono, CBR) and decodes with libmpg123;
    None when a library is missing."""
    lame, mpg = _Libs.get("mp3lame"), _Libs.get("mpg123")
    if lame is None or mpg is None:
        return None
    lame.lame_init.restype = ctypes.c_void_p
    gf = ctypes.c_void_p(lame.lame_init())
    for fn, value in (("lame_set_in_samplerate", RATE), ("lame_set_out_samplerate", RATE),
                      ("lame_set_num_channels", 1), ("lame_set_mode", 3), ("lame_set_brate", int(kbps))):
        getattr(lame, fn)(gf, value)
    if lame.lame_init_params(gf) < 0:
        lame.lame_close(gf)
        return None
    pcm = np.ascontiguousarray(np.clip(x, -1, 1).astype(np.float32))
    size = int(1.25 * len(pcm) + 7200)
    buf = (ctypes.c_ubyte * size)()
    fptr = pcm.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
    n = lame.lame_encode_buffer_ieee_float(gf, fptr, fptr, len(pcm), buf, size)
    n2 = lame.lame_encode_flush(gf, ctypes.byref(buf, max(0, n)), size - max(0, n))
    lame.lame_close(gf)
    if n < 0 or n2 < 0:
        return None
    data = bytes(buf[: n + n2])
    mpg.mpg123_init()
    mpg.mpg123_new.restype = ctypes.c_void_p
    err = ctypes.c_int()
    mh = ctypes.c_void_p(mpg.mpg123_new(None, ctypes.byref(err)))
    try:
        mpg.mpg123_format_none(mh)
        mpg.mpg123_format(mh, ctypes.c_long(RATE), 1, 0xD0)  # mono, signed 16 bit
        mpg.mpg123_open_feed(mh)
        mpg.mpg123_feed(mh, data, ctypes.c_size_t(len(data)))
        out, chunk, done = [], (ctypes.c_ubyte * 65536)(), ctypes.c_size_t()
        for _ in range(10000):
            rc = mpg.mpg123_read(mh, chunk, ctypes.c_size_t(65536), ctypes.byref(done))
            if done.value:
                out.append(np.frombuffer(bytes(chunk[: done.value]), np.int16).astype(np.float32) / 32768.0)
            if rc not in (0, -11):  # MPG123_OK, MPG123_NEW_FORMAT
                break
    finally:
        mpg.mpg123_delete(mh)
    if not out:
        return None
    return align(x, np.concatenate(out))[0]


def colored_noise(n, rng, alpha):
    """Unit-RMS noise with a 1/f^alpha power spectrum (0 white, 1 pink, 2 brown)."""
    white = rng.standard_normal(n)
    if alpha == 0 or n < 4:
        return white.astype(np.float32)
    spec = np.fft.rfft(white)
    f = np.maximum(np.fft.rfftfreq(n, 1.0 / RATE), 20.0)
    y = np.fft.irfft(spec / f ** (alpha / 2.0), n)
    return (y / max(1e-12, rms(y))).astype(np.float32)


def add_noise(x, rng, snr_db, alpha=0):
    return (x + colored_noise(len(x), rng, alpha) * rms(x) * 10 ** (-snr_db / 20.0)).astype(np.float32)


def draw_effects(rng, shares=None):
    """Names of the effects one clip gets (often none), drawn with a `random.Random`."""
    shares = CHAIN_SHARES if shares is None else shares
    effects = [name for name in ("reverb", "telephone") if rng.random() < shares.get(name, 0)]
    if rng.random() < shares.get("opus", 0):
        effects.append("opus")
    elif rng.random() < shares.get("mp3", 0):
        effects.append("mp3")
    return effects


def apply(x, effects, seed):
    """Applies the named effects in order, their parameters drawn from `seed`; a codec
    whose library is missing is skipped. Returns (clip, effects actually applied)."""
    rng = np.random.default_rng(seed)
    y, used = x.astype(np.float32), []
    for name in effects:
        if name == "vtlp":  # its parameters come from the seed, not from rng (vtlp_params)
            alpha, tone_db = vtlp_params(seed)
            z = vtlp(y, alpha, tone_db)
        elif name == "reverb":
            z = reverb(y, rng)
        elif name == "telephone":
            z = telephone(y, rng)
        elif name == "opus":
            z = opus_roundtrip(y, bitrate=int(rng.choice([8000, 12000, 16000, 24000, 32000])))
        elif name == "mp3":
            z = mp3_roundtrip(y, kbps=int(rng.choice([24, 32, 48, 64])))
        else:
            raise ValueError(f"[augment] unknown effect {name!r}; known: {sorted(CHAIN_SHARES) + ['vtlp']}")
        if z is not None:
            y, used = z, used + [name]
    return y, used


def _self_check():
    rng = np.random.default_rng(0)
    t = np.arange(RATE * 2) / RATE
    x = (0.3 * np.sin(2 * np.pi * 440 * t) * (np.sin(2 * np.pi * 3 * t) > 0)).astype(np.float32)
    for name, fn in (("vtlp 0.85", lambda v: vtlp(v, 0.85)), ("vtlp 1.15", lambda v: vtlp(v, 1.15)),
                     ("reverb", lambda v: reverb(v, rng)), ("telephone", telephone),
                     ("opus", opus_roundtrip), ("mp3", mp3_roundtrip)):
        y = fn(x)
        if y is None:
            print(f"{name:9s} library missing")
            continue
        snr = 10 * np.log10(rms(x) ** 2 / max(1e-12, rms(x - y) ** 2))
        print(f"{name:9s} len {len(y)} (in {len(x)}), rms {rms(y):.3f} (in {rms(x):.3f}), SNR vs input {snr:5.1f} dB")


if __name__ == "__main__":
    _self_check()
