// .npz = a zip of .npy members. numpy writes zip64 extra fields even for small members
// and may deflate them (np.savez_compressed), so both are handled; nothing else of zip is.
#include "audio/npz.h"

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "core/npy.h"

namespace hark {
namespace {

struct Member {
  std::string name;
  uint16_t method = 0;
  uint64_t compressed = 0, size = 0, local_offset = 0;
};

uint16_t u16(const std::string& b, size_t at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(b[at]) | (static_cast<uint8_t>(b[at + 1]) << 8));
}
uint32_t u32(const std::string& b, size_t at) { return u16(b, at) | (uint32_t{u16(b, at + 2)} << 16); }
uint64_t u64(const std::string& b, size_t at) { return u32(b, at) | (uint64_t{u32(b, at + 4)} << 32); }

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::ModelFormat, "[npz] '" + path + "': " + what + "; re-save it with numpy.savez");
}

void need(const std::string& b, uint64_t at, uint64_t n, const std::string& path) {
  if (at > b.size() || n > b.size() - at) bad(path, "truncated zip structure");
}

// Replaces 0xFFFFFFFF sizes/offset with the values of the zip64 extra field (id 1).
void apply_zip64(const std::string& b, size_t extra, size_t extra_len, Member& m) {
  for (size_t p = extra; p + 4 <= extra + extra_len;) {
    uint16_t id = u16(b, p), len = u16(b, p + 2);
    if (id == 1) {
      size_t q = p + 4, end = std::min(p + 4 + len, extra + extra_len);
      if (m.size == 0xFFFFFFFFu && q + 8 <= end) m.size = u64(b, q), q += 8;
      if (m.compressed == 0xFFFFFFFFu && q + 8 <= end) m.compressed = u64(b, q), q += 8;
      if (m.local_offset == 0xFFFFFFFFu && q + 8 <= end) m.local_offset = u64(b, q);
    }
    p += 4 + len;
  }
}

std::vector<Member> central_directory(const std::string& b, const std::string& path) {
  if (b.size() < 22) bad(path, "too small for a zip archive");
  size_t eocd = std::string::npos;
  size_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
  for (size_t p = b.size() - 22 + 1; p-- > lowest;)
    if (u32(b, p) == 0x06054b50) { eocd = p; break; }
  if (eocd == std::string::npos) bad(path, "no end-of-central-directory record (not a zip/npz?)");
  uint64_t count = u16(b, eocd + 10), offset = u32(b, eocd + 16);
  if ((count == 0xFFFF || offset == 0xFFFFFFFFu) && eocd >= 20 && u32(b, eocd - 20) == 0x07064b50) {
    uint64_t z64 = u64(b, eocd - 20 + 8);
    need(b, z64, 56, path);
    count = u64(b, z64 + 32);
    offset = u64(b, z64 + 48);
  }
  std::vector<Member> members;
  uint64_t p = offset;
  for (uint64_t i = 0; i < count; ++i) {
    need(b, p, 46, path);
    if (u32(b, p) != 0x02014b50) bad(path, "corrupt central directory");
    Member m;
    m.method = u16(b, p + 10);
    m.compressed = u32(b, p + 20);
    m.size = u32(b, p + 24);
    size_t name_len = u16(b, p + 28), extra_len = u16(b, p + 30), comment_len = u16(b, p + 32);
    m.local_offset = u32(b, p + 42);
    need(b, p + 46, name_len + extra_len, path);
    m.name = b.substr(p + 46, name_len);
    apply_zip64(b, p + 46 + name_len, extra_len, m);
    members.push_back(std::move(m));
    p += 46 + name_len + extra_len + comment_len;
  }
  return members;
}

std::string member_bytes(const std::string& b, const Member& m, const std::string& path) {
  need(b, m.local_offset, 30, path);
  if (u32(b, m.local_offset) != 0x04034b50) bad(path, "corrupt local header of '" + m.name + "'");
  uint64_t data = m.local_offset + 30 + u16(b, m.local_offset + 26) + u16(b, m.local_offset + 28);
  need(b, data, m.compressed, path);
  if (m.method == 0) return b.substr(data, m.compressed);
  if (m.method != 8) bad(path, "member '" + m.name + "' uses zip method " + std::to_string(m.method));
  if (m.size > (uint64_t{1} << 32)) bad(path, "member '" + m.name + "' is implausibly large");
  std::string out(m.size, '\0');
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) bad(path, "zlib initialisation failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(b.data() + data));
  zs.avail_in = static_cast<uInt>(m.compressed);
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&zs, Z_FINISH);
  uint64_t produced = zs.total_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || produced != m.size) bad(path, "member '" + m.name + "' does not inflate");
  return out;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::NotFound, "[npz] cannot open '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string array_name(const std::string& member) {
  return member.size() > 4 && member.ends_with(".npy") ? member.substr(0, member.size() - 4) : member;
}

}  // namespace

std::vector<std::string> npz_array_names(const std::string& path) {
  std::string bytes = read_all(path);
  std::vector<std::string> names;
  for (const Member& m : central_directory(bytes, path)) names.push_back(array_name(m.name));
  return names;
}

Tensor read_npz_array(const std::string& path, const std::string& name) {
  std::string bytes = read_all(path);
  for (const Member& m : central_directory(bytes, path)) {
    if (array_name(m.name) != name) continue;
    std::string npy = member_bytes(bytes, m, path);
    return parse_npy(reinterpret_cast<const unsigned char*>(npy.data()), npy.size(), path + ":" + m.name);
  }
  throw Error(ErrorCode::NotFound, "[npz] '" + path + "' has no array '" + name + "'");
}

}  // namespace hark
