// GET /: a single self-contained page (no external assets, works offline) with a
// hold-to-talk microphone that streams 16 kHz float32 into a session and a file upload
// form; GET /audio-worklet.js: the AudioWorklet that resamples the microphone to 16 kHz.
#pragma once

namespace hark::serve {

const char* web_page_html();
const char* web_worklet_js();

}  // namespace hark::serve
