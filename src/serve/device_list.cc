#include "serve/device_list.h"

#include <algorithm>

#include "hark/error.h"

namespace hark::serve {
namespace {

constexpr int kMaxGpuIndex = 255;
constexpr const char* kForms = "use cpu, cuda, cuda:N, auto, a GPU list such as cuda:0,cuda:1, or cuda:all";

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw Error(ErrorCode::InvalidArgument, "[serve] --device '" + text.substr(0, 100) + "': " + why);
}

std::string quoted(const std::string& item) {
  std::string out(1, '\'');
  out.append(item, 0, 40);
  out += '\'';
  return out;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// "cuda:N" with N a plain decimal GPU index → "cuda:N" without leading zeros; "" when not that form.
std::string canonical_gpu(const std::string& item) {
  const std::string prefix = "cuda:";
  if (item.rfind(prefix, 0) != 0) return "";
  const std::string digits = item.substr(prefix.size());
  auto is_digit = [](unsigned char c) { return c >= '0' && c <= '9'; };
  if (digits.empty() || digits.size() > 4 || !std::all_of(digits.begin(), digits.end(), is_digit)) return "";
  int index = std::stoi(digits);
  return index <= kMaxGpuIndex ? prefix + std::to_string(index) : "";
}

std::vector<std::string> split_items(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    items.push_back(trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

}  // namespace

DeviceSelection parse_device_selection(const std::string& text) {
  DeviceSelection out;
  const auto items = split_items(text);
  if (items.size() == 1 && items[0].empty()) bad(text, std::string("empty; ") + kForms);
  for (const std::string& item : items) {
    if (item.empty()) bad(text, "an empty entry between commas");
    if (item == "cuda:all") {
      if (items.size() > 1) bad(text, "cuda:all already names every GPU; list GPUs or write cuda:all alone");
      out.all_gpus = true;
      return out;
    }
    if (item == "cpu" || item == "auto") {
      if (items.size() > 1)
        bad(text, quoted(item) + " in a list: a device list names GPUs (cuda:N), one engine worker each");
      out.devices.push_back(item);
      continue;
    }
    std::string gpu = item == "cuda" ? (items.size() > 1 ? "cuda:0" : "cuda") : canonical_gpu(item);
    if (gpu.empty()) bad(text, quoted(item) + " is not a device; " + kForms);
    if (std::find(out.devices.begin(), out.devices.end(), gpu) != out.devices.end())
      bad(text, gpu + " is listed twice; each GPU gets one engine worker");
    out.devices.push_back(gpu);
  }
  return out;
}

}  // namespace hark::serve
