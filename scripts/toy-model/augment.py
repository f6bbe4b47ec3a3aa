"""Acoustic variety for synthesized clips, in numpy only (runs in the synthesis workers on
the GPU machine's CPU cores and on the development machine): room reverberation,
telephone channel (8 kHz, 300-3400 Hz, G.711 mu-law), Opus and MP3 round trips (libopus,
libmp3lame and libmpg123 through ctypes: the Debian 12 libraries carried in
.device-carry/debs with espeak-ng), coloured noise at a given SNR.

Every effect keeps the clip's length and timing (codec delays are measured and removed),
so utterance and word boundaries stay valid. `draw_effects` picks a chain for a clip,
`apply` runs it; `CHAIN_SHARES` says how often each effect is used.

  /usr/bin/python3 scripts/toy-model/augment.py     # self-check of every effect
"""
import ctypes
import ctypes.util
import os

import numpy as np

RATE = 16000
# Share of training clips that get each effect (independently drawn; most get none or one).
CHAIN_SHARES = {"reverb": 0.20, "telephone": 0.08, "opus": 0.08, "mp3": 0.06}


def rms(x):
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if len(x) else 0.0


def fft_convolve(x, h):
    n = len(x) + len(h) - 1
    size = 1 << (n - 1).bit_length()
    return np.fft.irfft(np.fft.rfft(x, size) * np.fft.rfft(h, size), size)[:n]


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
        if name == "reverb":
            z = reverb(y, rng)
        elif name == "telephone":
            z = telephone(y, rng)
        elif name == "opus":
            z = opus_roundtrip(y, bitrate=int(rng.choice([8000, 12000, 16000, 24000, 32000])))
        elif name == "mp3":
            z = mp3_roundtrip(y, kbps=int(rng.choice([24, 32, 48, 64])))
        else:
            raise ValueError(f"[augment] unknown effect {name!r}; known: {sorted(CHAIN_SHARES)}")
        if z is not None:
            y, used = z, used + [name]
    return y, used


def _self_check():
    rng = np.random.default_rng(0)
    t = np.arange(RATE * 2) / RATE
    x = (0.3 * np.sin(2 * np.pi * 440 * t) * (np.sin(2 * np.pi * 3 * t) > 0)).astype(np.float32)
    for name, fn in (("reverb", lambda v: reverb(v, rng)), ("telephone", telephone),
                     ("opus", opus_roundtrip), ("mp3", mp3_roundtrip)):
        y = fn(x)
        if y is None:
            print(f"{name:9s} library missing")
            continue
        snr = 10 * np.log10(rms(x) ** 2 / max(1e-12, rms(x - y) ** 2))
        print(f"{name:9s} len {len(y)} (in {len(x)}), rms {rms(y):.3f} (in {rms(x):.3f}), SNR vs input {snr:5.1f} dB")


if __name__ == "__main__":
    _self_check()
