#include "model/loaders/npz.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/mapped_file.h"
#include "core/npy.h"
#include "model/loaders/tensor_io.h"

namespace hark::loaders {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50, kLocator64Sig = 0x07064b50;
constexpr uint32_t kMax32 = 0xffffffffu;

[[noreturn]] void bad_npz(const std::string& what, const std::string& why) {
  throw Error(ErrorCode::ModelFormat, "[npz] '" + what + "': " + why);
}

uint64_t le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Bounds-checked little-endian reads of the archive image.
struct Reader {
  const unsigned char* data;
  size_t size;
  const std::string& what;
  uint64_t at(uint64_t offset, int bytes) const {
    if (offset > size || static_cast<uint64_t>(bytes) > size - offset) bad_npz(what, "truncated archive");
    return le(data + offset, bytes);
  }
};

struct Member {
  std::string name;
  uint16_t method = 0;
  uint64_t compressed = 0, uncompressed = 0, local_offset = 0;
};

struct Directory {
  uint64_t entries = 0, offset = 0, size = 0;
};

Directory find_directory(const Reader& r) {
  if (r.size < 22) bad_npz(r.what, "too short for a zip archive");
  // The end record sits in the last 22 bytes plus an optional comment of up to 64 KiB.
  const size_t lowest = r.size > 22 + 65535 ? r.size - 22 - 65535 : 0;
  for (size_t pos = r.size - 22 + 1; pos-- > lowest;) {
    if (le(r.data + pos, 4) != kEndSig) continue;
    Directory d{r.at(pos + 10, 2), r.at(pos + 16, 4), r.at(pos + 12, 4)};
    if (pos >= 20 && le(r.data + pos - 20, 4) == kLocator64Sig) {
      const uint64_t end64 = r.at(pos - 20 + 8, 8);
      if (r.at(end64, 4) != kEnd64Sig) bad_npz(r.what, "broken zip64 end record");
      d = {r.at(end64 + 32, 8), r.at(end64 + 48, 8), r.at(end64 + 40, 8)};
    }
    if (d.offset > r.size || d.size > r.size - d.offset) bad_npz(r.what, "central directory lies outside the file");
    return d;
  }
  bad_npz(r.what, "no zip end record (not an .npz archive, or truncated)");
}

// Reads the zip64 extra field (id 1): the 64-bit values of those fields that are 0xffffffff.
void apply_zip64_extra(const Reader& r, uint64_t extra, uint64_t extra_len, Member& m) {
  uint64_t pos = extra;
  while (pos + 4 <= extra + extra_len) {
    const uint64_t id = r.at(pos, 2), len = r.at(pos + 2, 2);
    uint64_t field = pos + 4;
    if (id == 1) {
      for (uint64_t* v : {&m.uncompressed, &m.compressed, &m.local_offset}) {
        if (*v != kMax32) continue;
        if (field + 8 > pos + 4 + len) bad_npz(r.what, "member '" + m.name + "': short zip64 field");
        *v = r.at(field, 8);
        field += 8;
      }
    }
    pos += 4 + len;
  }
}

// The central directory is authoritative: numpy writes local headers with zip64
// placeholders (force_zip64) and sizes that may only be final in the directory.
std::vector<Member> read_directory(const Reader& r) {
  const Directory d = find_directory(r);
  if (d.entries > d.size / 46) bad_npz(r.what, "central directory claims more members than it can hold");
  std::vector<Member> members;
  uint64_t pos = d.offset;
  for (uint64_t i = 0; i < d.entries; ++i) {
    if (r.at(pos, 4) != kCentralSig) bad_npz(r.what, "damaged central directory");
    Member m;
    m.method = static_cast<uint16_t>(r.at(pos + 10, 2));
    m.compressed = r.at(pos + 20, 4);
    m.uncompressed = r.at(pos + 24, 4);
    const uint64_t name_len = r.at(pos + 28, 2), extra_len = r.at(pos + 30, 2), comment_len = r.at(pos + 32, 2);
    m.local_offset = r.at(pos + 42, 4);
    if (pos + 46 + name_len + extra_len > r.size) bad_npz(r.what, "truncated central directory");
    m.name.assign(reinterpret_cast<const char*>(r.data + pos + 46), name_len);
    apply_zip64_extra(r, pos + 46 + name_len, extra_len, m);
    members.push_back(std::move(m));
    pos += 46 + name_len + extra_len + comment_len;
  }
  return members;
}

std::vector<unsigned char> inflate_member(const unsigned char* src, const Member& m, const std::string& what) {
  // Deflate cannot expand data by more than ~1032x: a larger claim is a corrupt or hostile file.
  if (m.uncompressed / 1100 > m.compressed + 1) bad_npz(what, "member '" + m.name + "' claims an impossible size");
  std::vector<unsigned char> out(m.uncompressed);
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw Error(ErrorCode::Internal, "[npz] zlib init failed");
  zs.next_in = const_cast<unsigned char*>(src);
  zs.next_out = out.data();
  uint64_t in_left = m.compressed, out_left = m.uncompressed;
  int rc = Z_OK;
  while (rc == Z_OK) {
    const uInt in_chunk = static_cast<uInt>(std::min<uint64_t>(in_left, 1u << 30));
    const uInt out_chunk = static_cast<uInt>(std::min<uint64_t>(out_left, 1u << 30));
    zs.avail_in = in_chunk;
    zs.avail_out = out_chunk;
    rc = inflate(&zs, Z_NO_FLUSH);
    in_left -= in_chunk - zs.avail_in;
    out_left -= out_chunk - zs.avail_out;
    if (rc == Z_OK && in_chunk == zs.avail_in && out_chunk == zs.avail_out) rc = Z_BUF_ERROR;  // no progress
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || out_left != 0)
    bad_npz(what,
            "member '" + m.name + "' does not inflate to its declared " + std::to_string(m.uncompressed) + " bytes");
  return out;
}

}  // namespace

std::vector<NamedTensor> parse_npz(const unsigned char* data, size_t size, const std::string& what) {
  const Reader r{data, size, what};
  std::vector<NamedTensor> out;
  for (const Member& m : read_directory(r)) {
    if (r.at(m.local_offset, 4) != kLocalSig) bad_npz(what, "member '" + m.name + "': damaged local header");
    const uint64_t start = m.local_offset + 30 + r.at(m.local_offset + 26, 2) + r.at(m.local_offset + 28, 2);
    if (start > size || m.compressed > size - start)
      bad_npz(what, "member '" + m.name + "' extends past the end of the file");
    std::string name = m.name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    const std::string label = what + ":" + m.name;
    if (m.method == 0) {
      if (m.uncompressed != m.compressed) bad_npz(what, "stored member '" + m.name + "' has inconsistent sizes");
      out.push_back({name, parse_npy(data + start, m.compressed, label)});
    } else if (m.method == 8) {
      const auto bytes = inflate_member(data + start, m, what);
      out.push_back({name, parse_npy(bytes.data(), bytes.size(), label)});
    } else {
      throw Error(ErrorCode::UnsupportedFormat, "[npz] '" + what + "': member '" + m.name + "' uses zip method " +
                                                    std::to_string(m.method) + "; only stored and deflated are read");
    }
  }
  return out;
}

std::vector<NamedTensor> read_npz(const std::string& path) {
  auto file = MappedFile::open(path);
  return parse_npz(file->data(), file->size(), path);
}

namespace {

void put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

uint32_t crc_of(const std::string& bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t pos = 0; pos < bytes.size(); pos += 1u << 30) {
    const uInt n = static_cast<uInt>(std::min<size_t>(bytes.size() - pos, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + pos), n);
  }
  return static_cast<uint32_t>(crc);
}

// Local and central headers of one stored member; zip64 extras only where a value needs them.
std::string member_header(bool central, const std::string& name, uint32_t crc, uint64_t size, uint64_t offset) {
  const bool big_size = size >= kMax32, big_offset = central && offset >= kMax32;
  std::string extra;
  if (big_size || big_offset) {
    std::string fields;
    if (big_size) put(fields, size, 8), put(fields, size, 8);
    if (big_offset) put(fields, offset, 8);
    put(extra, 1, 2);
    put(extra, fields.size(), 2);
    extra += fields;
  }
  const uint16_t version = extra.empty() ? 20 : 45;
  std::string h;
  put(h, central ? kCentralSig : kLocalSig, 4);
  if (central) put(h, version, 2);
  put(h, version, 2);  // version needed
  put(h, 0, 2);        // flags
  put(h, 0, 2);        // method: stored
  put(h, 0, 2);        // time
  put(h, 0x21, 2);     // date: 1980-01-01
  put(h, crc, 4);
  put(h, big_size ? kMax32 : size, 4);
  put(h, big_size ? kMax32 : size, 4);
  put(h, name.size(), 2);
  put(h, extra.size(), 2);
  if (central) {
    put(h, 0, 2);  // comment length
    put(h, 0, 2);  // disk
    put(h, 0, 2);  // internal attributes
    put(h, 0, 4);  // external attributes
    put(h, big_offset ? kMax32 : offset, 4);
  }
  return h + name + extra;
}

std::string end_records(uint64_t count, uint64_t cd_offset, uint64_t cd_size) {
  std::string e;
  const bool zip64 = count >= 0xffff || cd_offset >= kMax32 || cd_size >= kMax32;
  if (zip64) {
    const uint64_t end64 = cd_offset + cd_size;
    put(e, kEnd64Sig, 4);
    put(e, 44, 8);
    put(e, 45, 2), put(e, 45, 2), put(e, 0, 4), put(e, 0, 4);
    put(e, count, 8), put(e, count, 8), put(e, cd_size, 8), put(e, cd_offset, 8);
    put(e, kLocator64Sig, 4), put(e, 0, 4), put(e, end64, 8), put(e, 1, 4);
  }
  put(e, kEndSig, 4);
  put(e, 0, 2), put(e, 0, 2);
  put(e, zip64 ? 0xffff : count, 2), put(e, zip64 ? 0xffff : count, 2);
  put(e, zip64 ? kMax32 : cd_size, 4), put(e, zip64 ? kMax32 : cd_offset, 4);
  put(e, 0, 2);
  return e;
}

}  // namespace

void write_npz(const std::string& path, const std::vector<NamedTensor>& tensors, DType dtype) {
  // One member in memory at a time: the CRC must precede the data in the local header.
  write_file_atomically(path, [&](std::FILE* f) {
    std::string central;
    uint64_t offset = 0;
    for (const auto& [name, t] : tensors) {
      const std::string member = name + ".npy";
      const std::string bytes = encode_npy(cast_tensor(t, dtype));
      const uint32_t crc = crc_of(bytes);
      const std::string local = member_header(false, member, crc, bytes.size(), offset);
      central += member_header(true, member, crc, bytes.size(), offset);
      write_bytes(f, local.data(), local.size(), path);
      write_bytes(f, bytes.data(), bytes.size(), path);
      offset += local.size() + bytes.size();
    }
    const std::string end = end_records(tensors.size(), offset, central.size());
    write_bytes(f, central.data(), central.size(), path);
    write_bytes(f, end.data(), end.size(), path);
  });
}

}  // namespace hark::loaders
