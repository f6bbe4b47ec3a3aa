// The numeric core of word timing, as the reference's timing module: a median filter
// along time and dynamic time warping over a token × frame cost matrix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hark {

// A row-major matrix of floats.
struct Matrix {
  int rows = 0, cols = 0;
  std::vector<float> data;
  float& at(int r, int c) { return data[static_cast<size_t>(r) * cols + c]; }
  float at(int r, int c) const { return data[static_cast<size_t>(r) * cols + c]; }
};

// Median over a window of `width` (odd) along each row, with reflect padding at the
// edges (the edge value itself is not repeated). Rows of at most width/2 columns are
// returned unchanged, as in the reference.
void median_filter_rows(Matrix& m, int width);

// The minimum-cost monotonic path through `cost` from (0, 0) to (rows−1, cols−1) with
// steps (1,1), (1,0), (0,1); ties go the reference's way (diagonal only when strictly
// cheapest, then vertical, else horizontal). Returns the path as parallel index lists.
void dtw(const Matrix& cost, std::vector<int>& text_indices, std::vector<int>& time_indices);

}  // namespace hark
