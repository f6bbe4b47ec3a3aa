// GET /: a single self-contained page with a hold-to-talk microphone (streams 16 kHz
// float32 into a session) and a file upload box.
#pragma once

namespace hark::serve {

const char* web_page_html();

}  // namespace hark::serve
