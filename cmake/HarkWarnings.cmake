# Warnings and code generation flags shared by every hark target.
add_library(hark_flags INTERFACE)
target_compile_options(hark_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter -Wno-sign-compare>
  # No fused multiply-add contraction: parity with the oracle needs IEEE-exact formulas.
  $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off>
  # No value changes, only no promise to keep FP exception flags: without it GCC leaves
  # the clamps of fast_exp as branches on AVX2 (AVX-512 has masks), so softmax and GELU
  # ran scalar there and took a third of the CPU encoder on an AVX2 machine.
  $<$<COMPILE_LANGUAGE:CXX>:-fno-trapping-math>)
if(HARK_NATIVE)
  target_compile_options(hark_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()
# Release builds keep exact IEEE semantics (no -ffast-math): parity tests depend on it.
target_compile_options(hark_flags INTERFACE $<$<AND:$<CONFIG:Release>,$<COMPILE_LANGUAGE:CXX>>:-O3>)
