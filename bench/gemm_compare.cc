// OpenBLAS versus oneDNN sgemm on the encoder's matrix shapes (tiny and base), single
// threaded, process CPU time per call (robust on a shared machine). Built only when
// HARK_BENCH is on and oneDNN (Debian libdnnl-dev) is installed.
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <random>
#include <vector>

namespace {

double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

template <class F>
double median_ms(F&& f, int runs) {
  std::vector<double> t;
  f();
  for (int r = 0; r < runs; ++r) {
    const double t0 = cpu_ms();
    f();
    t.push_back(cpu_ms() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  openblas_set_num_threads(1);
  struct Shape { const char* what; int m, n, k; };
  const Shape shapes[] = {{"tiny qkv/out 1500x384x384", 1500, 384, 384}, {"tiny fc1 1500x1536x384", 1500, 1536, 384},
                          {"tiny fc2 1500x384x1536", 1500, 384, 1536}, {"base fc1 1500x2048x512", 1500, 2048, 512},
                          {"attention scores 1500x1500x64", 1500, 1500, 64}};
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::printf("%-32s %12s %12s\n", "shape (m x n x k)", "OpenBLAS ms", "oneDNN ms");
  for (const auto& s : shapes) {
    std::vector<float> a(size_t(s.m) * s.k), b(size_t(s.n) * s.k), c(size_t(s.m) * s.n);
    for (auto& v : a) v = u(rng);
    for (auto& v : b) v = u(rng);
    const double blas = median_ms([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s.m, s.n, s.k, 1.f, a.data(), s.k, b.data(), s.k, 0.f,
                  c.data(), s.n);
    }, 7);
    const double dnnl = median_ms([&] {
      dnnl_sgemm('N', 'T', s.m, s.n, s.k, 1.f, a.data(), s.k, b.data(), s.k, 0.f, c.data(), s.n);
    }, 7);
    std::printf("%-32s %12.2f %12.2f\n", s.what, blas, dnnl);
  }
  return 0;
}
