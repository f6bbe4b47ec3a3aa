// Everything that is not a native WAV: FFmpeg's demuxers and decoders reading from a
// memory buffer through a custom AVIOContext. Only audio containers are allowed, nested
// opens (playlists, references to other files) are refused, and decoding is bounded by
// the duration limit, so an upload can never make hark touch the file system or grow
// without bound.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avstring.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
}

#include "audio/audio_internal.h"

namespace hark::audio_detail {
namespace {

// Demuxers an upload may use. Anything else FFmpeg recognises (images, playlists,
// subtitles, raw video) is UnsupportedFormat.
constexpr const char* kDemuxers =
    "wav,w64,mp3,aac,mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,ogg,flac,aiff,caf,au,amr,ac3,eac3,wv,ape,tta,asf,"
    "avi,mpegts,mpeg,dts,voc,mpc,mpc8";
constexpr size_t kProbeBytes = 1 << 20;
constexpr int kIoBufferSize = 1 << 15;

// FFmpeg logs through one global callback: keep the latest error line of this thread so
// it can go into the hark::Error message, and print nothing.
thread_local std::string t_last_log;

void capture_log(void*, int level, const char* fmt, va_list args) {
  if (level > AV_LOG_ERROR) return;
  char line[512];
  vsnprintf(line, sizeof line, fmt, args);
  t_last_log = line;
  while (!t_last_log.empty() && (t_last_log.back() == '\n' || t_last_log.back() == ' ')) t_last_log.pop_back();
}

void install_log_callback() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(capture_log); });
}

std::string av_error_text(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, buf, sizeof buf);
  std::string text = buf;
  if (!t_last_log.empty()) text += " (" + t_last_log + ")";
  return text;
}

struct MemoryReader {
  const uint8_t* data;
  size_t size;
  size_t pos = 0;
};

int read_packet(void* opaque, uint8_t* buf, int buf_size) {
  auto* r = static_cast<MemoryReader*>(opaque);
  size_t n = std::min(static_cast<size_t>(std::max(buf_size, 0)), r->size - r->pos);
  if (n == 0) return AVERROR_EOF;
  std::memcpy(buf, r->data + r->pos, n);
  r->pos += n;
  return static_cast<int>(n);
}

int64_t seek(void* opaque, int64_t offset, int whence) {
  auto* r = static_cast<MemoryReader*>(opaque);
  int64_t base = 0;
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return static_cast<int64_t>(r->size);
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = static_cast<int64_t>(r->pos); break;
    case SEEK_END: base = static_cast<int64_t>(r->size); break;
    default: return AVERROR(EINVAL);
  }
  if (offset > static_cast<int64_t>(r->size) - base || offset < -base) return AVERROR(EINVAL);
  r->pos = static_cast<size_t>(base + offset);
  return static_cast<int64_t>(r->pos);
}

// A demuxer asking to open another URL (HLS, concat, dash, references in mov) is refused.
int refuse_nested_open(AVFormatContext*, AVIOContext**, const char* url, int, AVDictionary**) {
  return AVERROR(EPERM);
}

struct IoDeleter {
  void operator()(AVIOContext* io) const {
    if (!io) return;
    av_freep(&io->buffer);
    avio_context_free(&io);
  }
};
struct FormatDeleter {
  void operator()(AVFormatContext* f) const { avformat_close_input(&f); }
};
struct CodecDeleter {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct FrameDeleter {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};

[[noreturn]] void fail(ErrorCode code, std::string_view name, const std::string& what) {
  std::string label = name.empty() ? "input" : "'" + std::string(name) + "'";
  throw Error(code, "[audio] cannot decode " + label + ": " + what + "; " + kAcceptedFormats);
}

const AVInputFormat* probe_container(const uint8_t* data, size_t size, std::string_view name) {
  size_t n = std::min(size, kProbeBytes);
  std::vector<uint8_t> buf(n + AVPROBE_PADDING_SIZE, 0);
  std::memcpy(buf.data(), data, n);
  std::string filename(name);
  AVProbeData pd{};
  pd.filename = filename.c_str();
  pd.buf = buf.data();
  pd.buf_size = static_cast<int>(n);
  int score = 0;
  const AVInputFormat* fmt = av_probe_input_format2(&pd, 1, &score);
  if (!fmt) fail(ErrorCode::InvalidAudio, name, "not a recognised audio container");
  if (av_match_list(fmt->name, kDemuxers, ',') <= 0)
    fail(ErrorCode::UnsupportedFormat, name, std::string("'") + fmt->name + "' is not an audio container hark reads");
  return fmt;
}

// Averages the channels of one decoded frame (any sample format) into mono floats.
void append_mono(const AVFrame* frame, std::vector<float>& mono) {
  const int channels = frame->ch_layout.nb_channels;
  const int n = frame->nb_samples;
  const auto fmt = static_cast<AVSampleFormat>(frame->format);
  const bool planar = av_sample_fmt_is_planar(fmt);
  const AVSampleFormat packed = av_get_packed_sample_fmt(fmt);
  auto sample = [&](int c, int i) -> double {
    const uint8_t* base = planar ? frame->extended_data[c] : frame->extended_data[0];
    size_t idx = planar ? static_cast<size_t>(i) : static_cast<size_t>(i) * channels + c;
    switch (packed) {
      case AV_SAMPLE_FMT_U8: return (base[idx] - 128) / 128.0;
      case AV_SAMPLE_FMT_S16: return reinterpret_cast<const int16_t*>(base)[idx] / 32768.0;
      case AV_SAMPLE_FMT_S32: return reinterpret_cast<const int32_t*>(base)[idx] / 2147483648.0;
      case AV_SAMPLE_FMT_S64: return static_cast<double>(reinterpret_cast<const int64_t*>(base)[idx]) / 9223372036854775808.0;
      case AV_SAMPLE_FMT_FLT: return reinterpret_cast<const float*>(base)[idx];
      case AV_SAMPLE_FMT_DBL: return reinterpret_cast<const double*>(base)[idx];
      default: return 0.0;
    }
  };
  size_t base = mono.size();
  mono.resize(base + static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    double sum = 0;
    for (int c = 0; c < channels; ++c) sum += sample(c, i);
    double v = channels == 1 ? sum : sum / channels;
    mono[base + i] = std::isfinite(v) ? static_cast<float>(v) : 0.0f;
  }
}

// Decoding state for the chosen stream: frames → mono → 16 kHz, with the duration bound.
struct StreamDecoder {
  AVCodecContext* codec;
  const AudioLimits& limits;
  std::string_view name;
  DecodedAudio& out;
  std::unique_ptr<StreamResampler> resampler;
  std::vector<float> mono;
  double seconds = 0;

  void take_frame(const AVFrame* frame) {
    int channels = frame->ch_layout.nb_channels;
    if (channels <= 0 || channels > kMaxChannels)
      fail(ErrorCode::InvalidAudio, name, std::to_string(channels) + " channels in a decoded frame");
    if (frame->sample_rate < kMinInputRate || frame->sample_rate > kMaxInputRate)
      fail(ErrorCode::InvalidAudio, name, "sample rate " + std::to_string(frame->sample_rate) + " Hz");
    if (av_get_packed_sample_fmt(static_cast<AVSampleFormat>(frame->format)) == AV_SAMPLE_FMT_NONE)
      fail(ErrorCode::UnsupportedFormat, name, "decoder produced an unknown sample format");
    seconds += static_cast<double>(frame->nb_samples) / frame->sample_rate;
    if (seconds > limits.max_seconds) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "' is longer than the limit of %g s; split it or raise the limit", limits.max_seconds);
      throw Error(ErrorCode::TooLarge, "[audio] '" + std::string(name.empty() ? "input" : name) + buf);
    }
    if (!resampler || resampler->input_rate() != frame->sample_rate) {
      if (resampler) resampler->flush(out.samples);  // a mid-stream rate change (rare)
      resampler = std::make_unique<StreamResampler>(frame->sample_rate);
      if (out.sample_rate == 0) out.sample_rate = frame->sample_rate;
    }
    mono.clear();
    append_mono(frame, mono);
    resampler->feed(mono.data(), mono.size(), out.samples);
  }

  // Drains every frame the decoder has ready; returns false on a decode error.
  bool drain(AVFrame* frame) {
    for (;;) {
      int rc = avcodec_receive_frame(codec, frame);
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return true;
      if (rc < 0) return false;
      take_frame(frame);
      av_frame_unref(frame);
    }
  }
};

AVCodecContext* open_decoder(AVStream* stream, const AVCodec* decoder, std::string_view name) {
  const AVCodecParameters* par = stream->codecpar;
  if (par->ch_layout.nb_channels < 0 || par->ch_layout.nb_channels > kMaxChannels)
    fail(ErrorCode::InvalidAudio, name, std::to_string(par->ch_layout.nb_channels) + " channels");
  AVCodecContext* ctx = avcodec_alloc_context3(decoder);
  if (!ctx) throw Error(ErrorCode::OutOfMemory, "[audio] cannot allocate a decoder");
  int rc = avcodec_parameters_to_context(ctx, par);
  ctx->thread_count = 1;  // hark parallelises across requests, not inside one decode
  if (rc >= 0) rc = avcodec_open2(ctx, decoder, nullptr);
  if (rc < 0) {
    avcodec_free_context(&ctx);
    fail(ErrorCode::InvalidAudio, name, "cannot open the " + std::string(avcodec_get_name(par->codec_id)) +
                                            " decoder: " + av_error_text(rc));
  }
  return ctx;
}

}  // namespace

DecodedAudio ffmpeg_decode(const uint8_t* data, size_t size, const AudioLimits& limits, std::string_view name) {
  install_log_callback();
  t_last_log.clear();
  const AVInputFormat* input_format = probe_container(data, size, name);

  MemoryReader reader{data, size};
  auto* io_buffer = static_cast<uint8_t*>(av_malloc(kIoBufferSize));
  std::unique_ptr<AVIOContext, IoDeleter> io(
      avio_alloc_context(io_buffer, kIoBufferSize, 0, &reader, read_packet, nullptr, seek));
  if (!io) {
    av_free(io_buffer);
    throw Error(ErrorCode::OutOfMemory, "[audio] cannot allocate an I/O context");
  }
  AVFormatContext* raw_fmt = avformat_alloc_context();
  if (!raw_fmt) throw Error(ErrorCode::OutOfMemory, "[audio] cannot allocate a demuxer");
  raw_fmt->pb = io.get();
  raw_fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
  raw_fmt->io_open = refuse_nested_open;
  AVDictionary* opts = nullptr;
  av_dict_set(&opts, "format_whitelist", kDemuxers, 0);
  int rc = avformat_open_input(&raw_fmt, std::string(name).c_str(), input_format, &opts);
  av_dict_free(&opts);
  if (rc == AVERROR_EOF) fail(ErrorCode::InvalidAudio, name, "the data ends inside its header (truncated file?)");
  if (rc < 0) fail(ErrorCode::InvalidAudio, name, "container not readable: " + av_error_text(rc));
  std::unique_ptr<AVFormatContext, FormatDeleter> fmt(raw_fmt);
  if ((rc = avformat_find_stream_info(fmt.get(), nullptr)) < 0)
    fail(ErrorCode::InvalidAudio, name, "cannot read stream parameters: " + av_error_text(rc));

  const AVCodec* decoder = nullptr;
  int index = av_find_best_stream(fmt.get(), AVMEDIA_TYPE_AUDIO, -1, -1, &decoder, 0);
  if (index == AVERROR_STREAM_NOT_FOUND) fail(ErrorCode::InvalidAudio, name, "it contains no audio stream");
  if (index < 0 || !decoder) fail(ErrorCode::UnsupportedFormat, name, "no decoder for its audio codec");
  AVStream* stream = fmt->streams[index];
  std::unique_ptr<AVCodecContext, CodecDeleter> codec(open_decoder(stream, decoder, name));

  DecodedAudio out;
  out.container = fmt->iformat->name;
  out.codec = avcodec_get_name(stream->codecpar->codec_id);
  out.channels = stream->codecpar->ch_layout.nb_channels;
  StreamDecoder dec{codec.get(), limits, name, out, nullptr, {}, 0.0};
  std::unique_ptr<AVPacket, PacketDeleter> packet(av_packet_alloc());
  std::unique_ptr<AVFrame, FrameDeleter> frame(av_frame_alloc());
  int errors = 0;
  // Every packet consumes input, but a demuxer stuck on zero-byte packets must not spin.
  uint64_t packet_budget = 4 * static_cast<uint64_t>(size) + 100000;
  while ((rc = av_read_frame(fmt.get(), packet.get())) >= 0) {
    if (--packet_budget == 0) fail(ErrorCode::InvalidAudio, name, "the demuxer made no progress");
    if (packet->stream_index == index) {
      if (avcodec_send_packet(codec.get(), packet.get()) < 0) ++errors;
      if (!dec.drain(frame.get())) ++errors;
    }
    av_packet_unref(packet.get());
  }
  if (rc != AVERROR_EOF && out.samples.empty() && dec.seconds == 0)
    fail(ErrorCode::InvalidAudio, name, "read error: " + av_error_text(rc));
  avcodec_send_packet(codec.get(), nullptr);
  if (!dec.drain(frame.get())) ++errors;
  if (dec.resampler) dec.resampler->flush(out.samples);
  if (dec.seconds == 0 && errors > 0)
    fail(ErrorCode::InvalidAudio, name, "no decodable audio (" + std::to_string(errors) +
                                            " decode errors, last: " + av_error_text(AVERROR_INVALIDDATA) + ")");
  if (out.channels <= 0) out.channels = codec->ch_layout.nb_channels;
  return out;
}

}  // namespace hark::audio_detail

namespace hark {
bool audio_has_ffmpeg() { return true; }
}  // namespace hark
