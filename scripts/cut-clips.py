#!/usr/bin/env python3
"""Cuts load-test clips: OUTDIR/clip-NNN.wav of each given length in seconds, from SOURCE
(a 16 kHz mono PCM16 WAV) repeated as often as needed. Standard library only (the GPU
machine has no FFmpeg). Used by scripts/bench-batching.sh and scripts/device/run-all.sh.

    python3 scripts/cut-clips.py SOURCE OUTDIR SECONDS...
"""
import sys
import wave


def main(source, outdir, *seconds):
    src = wave.open(source)
    assert src.getframerate() == 16000 and src.getnchannels() == 1 and src.getsampwidth() == 2, source
    pcm = src.readframes(src.getnframes())
    for sec in map(int, seconds):
        need = sec * 16000 * 2
        with wave.open(f"{outdir}/clip-{sec:03d}.wav", "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(16000)
            w.writeframes((pcm * (need // len(pcm) + 1))[:need])


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
