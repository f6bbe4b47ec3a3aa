# HARK_SANITIZE=address;undefined turns on ASan/UBSan for every target.
if(HARK_SANITIZE)
  string(REPLACE ";" "," _hark_san "${HARK_SANITIZE}")
  add_compile_options(-fsanitize=${_hark_san} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${_hark_san})
  message(STATUS "hark: sanitizers ${_hark_san}")
endif()
