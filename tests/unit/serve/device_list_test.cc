// hark serve --device: one device, a GPU list or cuda:all, and a clear error for the rest.
#include <gtest/gtest.h>

#include "hark/error.h"
#include "serve/device_list.h"

namespace hark::serve {
namespace {

using Devices = std::vector<std::string>;

TEST(DeviceList, OneDeviceStaysAsWritten) {
  for (const std::string d : {"cpu", "auto", "cuda", "cuda:0", "cuda:7"}) {
    auto s = parse_device_selection(d);
    EXPECT_EQ(s.devices, Devices{d});
    EXPECT_FALSE(s.several()) << d;
  }
  EXPECT_EQ(parse_device_selection(" cuda:3 ").devices, Devices{"cuda:3"});
  EXPECT_EQ(parse_device_selection("cuda:007").devices, Devices{"cuda:7"});
}

TEST(DeviceList, GpuListsKeepTheirOrder) {
  auto s = parse_device_selection("cuda:1, cuda:0,cuda:3");
  EXPECT_EQ(s.devices, (Devices{"cuda:1", "cuda:0", "cuda:3"}));
  EXPECT_TRUE(s.several());
  EXPECT_FALSE(s.all_gpus);
  EXPECT_EQ(parse_device_selection("cuda,cuda:1").devices, (Devices{"cuda:0", "cuda:1"})) << "bare cuda is GPU 0";
}

TEST(DeviceList, CudaAllNamesEveryGpu) {
  auto s = parse_device_selection("cuda:all");
  EXPECT_TRUE(s.all_gpus);
  EXPECT_TRUE(s.several());
  EXPECT_TRUE(s.devices.empty());
}

TEST(DeviceList, BadValuesSayWhatIsWrong) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "empty"},
      {"cuda:0,,cuda:1", "empty entry"},
      {"cuda:0,", "empty entry"},
      {"gpu", "'gpu' is not a device"},
      {"cuda:x", "'cuda:x' is not a device"},
      {"cuda:-1", "'cuda:-1' is not a device"},
      {"cuda:1.5", "is not a device"},
      {"cuda:", "is not a device"},
      {"cuda:256", "is not a device"},
      {"cuda:99999999999", "is not a device"},
      {"cuda:0,cuda:0", "cuda:0 is listed twice"},
      {"cuda,cuda:0", "cuda:0 is listed twice"},
      {"cuda:all,cuda:1", "cuda:all already names every GPU"},
      {"cpu,cuda:0", "'cpu' in a list"},
      {"cuda:0,auto", "'auto' in a list"},
  };
  for (auto [text, expected] : cases) {
    try {
      parse_device_selection(text);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << text;
      const std::string message = e.what();
      EXPECT_NE(message.find(expected), std::string::npos) << text << " → " << message;
      EXPECT_EQ(message.rfind("[serve] --device", 0), 0u) << message;
    }
  }
}

}  // namespace
}  // namespace hark::serve
