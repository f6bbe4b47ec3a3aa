// The order in which waiting windows are encoded (queue_window): oldest request first, in
// submission order among one request's windows and among requests that began together;
// HARK_ENCODE_ORDER=window keeps plain submission order.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <memory>
#include <vector>

#include "batch/batch_internal.h"

namespace hark {
namespace {

std::shared_ptr<EncodeRequest> window(BatchClock::time_point start, int id) {
  auto r = std::make_shared<EncodeRequest>();
  r->request_start = start;
  r->audio_ctx = id;  // the window's name in these tests
  return r;
}

std::vector<int> ids(const std::deque<std::shared_ptr<EncodeRequest>>& queue) {
  std::vector<int> out;
  for (const auto& r : queue) out.push_back(r->audio_ctx);
  return out;
}

TEST(EncodeOrder, OlderRequestsGoFirst) {
  const auto t0 = BatchClock::now();
  const auto t1 = t0 + std::chrono::seconds(1), t2 = t0 + std::chrono::seconds(2);
  std::deque<std::shared_ptr<EncodeRequest>> queue;
  queue_window(queue, window(t1, 1), false);  // a request's first window
  queue_window(queue, window(t2, 2), false);  // a newer request's first window
  queue_window(queue, window(t0, 3), false);  // the second window of a request older than both
  queue_window(queue, window(t1, 4), false);  // request 1's second window: behind 1, ahead of 2
  queue_window(queue, window(t0, 5), false);  // the oldest request's third window: after its second
  EXPECT_EQ(ids(queue), (std::vector<int>{3, 5, 1, 4, 2}));
}

TEST(EncodeOrder, WindowOrderKeepsSubmissionOrder) {
  const auto t0 = BatchClock::now();
  std::deque<std::shared_ptr<EncodeRequest>> queue;
  queue_window(queue, window(t0 + std::chrono::seconds(5), 1), true);
  queue_window(queue, window(t0, 2), true);
  queue_window(queue, window(t0 + std::chrono::seconds(1), 3), true);
  EXPECT_EQ(ids(queue), (std::vector<int>{1, 2, 3}));
}

}  // namespace
}  // namespace hark
