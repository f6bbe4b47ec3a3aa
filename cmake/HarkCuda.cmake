# The CUDA backend is built when HARK_CUDA is on and nvcc is found; otherwise the
# library links core/cuda/unavailable.cc, which reports that CUDA is missing.
set(HARK_HAVE_CUDA OFF)
if(HARK_CUDA)
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # sm_90a (Hopper, H100/H200, with its wgmma instructions) as real code plus PTX for
      # other GPUs, which the driver compiles at load.
      set(CMAKE_CUDA_ARCHITECTURES 90a-real 80-virtual)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(HARK_HAVE_CUDA ON)
    message(STATUS "hark: CUDA backend enabled (${CMAKE_CUDA_COMPILER})")
  else()
    message(STATUS "hark: nvcc not found, CUDA backend disabled")
  endif()
endif()
