#include "align/dtw.h"

#include <algorithm>
#include <limits>

#include "hark/error.h"

namespace hark {

void median_filter_rows(Matrix& m, int width) {
  const int pad = width / 2;
  if (width < 1 || width % 2 == 0) throw Error(ErrorCode::InvalidArgument, "[align] median filter width must be odd");
  if (m.cols <= pad) return;
  std::vector<float> padded(m.cols + 2 * pad), window(width);
  for (int r = 0; r < m.rows; ++r) {
    float* row = &m.data[static_cast<size_t>(r) * m.cols];
    for (int i = 0; i < m.cols + 2 * pad; ++i) {
      int src = i - pad;
      if (src < 0) src = -src;                              // reflect: x[1], x[2], ...
      if (src >= m.cols) src = 2 * (m.cols - 1) - src;      // ..., x[n-2], x[n-3]
      padded[i] = row[std::clamp(src, 0, m.cols - 1)];
    }
    for (int c = 0; c < m.cols; ++c) {
      std::copy(padded.begin() + c, padded.begin() + c + width, window.begin());
      std::nth_element(window.begin(), window.begin() + pad, window.end());
      row[c] = window[pad];
    }
  }
}

void dtw(const Matrix& x, std::vector<int>& text_indices, std::vector<int>& time_indices) {
  const int n = x.rows, m = x.cols;
  if (n <= 0 || m <= 0) throw Error(ErrorCode::InvalidArgument, "[align] DTW needs a non-empty cost matrix");
  const float inf = std::numeric_limits<float>::infinity();
  // float32 accumulated costs, as the reference's cost array.
  std::vector<float> cost(static_cast<size_t>(n + 1) * (m + 1), inf);
  std::vector<int8_t> trace(static_cast<size_t>(n + 1) * (m + 1), -1);
  auto idx = [m](int i, int j) { return static_cast<size_t>(i) * (m + 1) + j; };
  cost[idx(0, 0)] = 0;
  for (int j = 1; j <= m; ++j) {
    for (int i = 1; i <= n; ++i) {
      const float c0 = cost[idx(i - 1, j - 1)], c1 = cost[idx(i - 1, j)], c2 = cost[idx(i, j - 1)];
      float c;
      int8_t t;
      if (c0 < c1 && c0 < c2) {
        c = c0, t = 0;
      } else if (c1 < c0 && c1 < c2) {
        c = c1, t = 1;
      } else {
        c = c2, t = 2;
      }
      cost[idx(i, j)] = x.at(i - 1, j - 1) + c;
      trace[idx(i, j)] = t;
    }
  }
  for (int j = 0; j <= m; ++j) trace[idx(0, j)] = 2;
  for (int i = 0; i <= n; ++i) trace[idx(i, 0)] = 1;
  text_indices.clear();
  time_indices.clear();
  int i = n, j = m;
  while (i > 0 || j > 0) {
    text_indices.push_back(i - 1);
    time_indices.push_back(j - 1);
    const int8_t t = trace[idx(i, j)];
    if (t == 0) {
      --i, --j;
    } else if (t == 1) {
      --i;
    } else {
      --j;
    }
  }
  std::reverse(text_indices.begin(), text_indices.end());
  std::reverse(time_indices.begin(), time_indices.end());
}

}  // namespace hark
