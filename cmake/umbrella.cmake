# Public headers: every sim/include/kvsim/*.h is installed, included by the
# umbrella kvsim.h generated here, and compiled on its own with nothing but
# the public include folder and cJSON's (so none includes a private header
# from sim/src and each one includes what it uses).
# Sets KVSIM_PUBLIC_HEADERS, KVSIM_GENERATED_INCLUDE, KVSIM_UMBRELLA_H.
file(GLOB KVSIM_PUBLIC_HEADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/sim/include/kvsim/*.h)
list(SORT KVSIM_PUBLIC_HEADERS)
# The umbrella's list of cJSON headers is read from the headers' text:
# reconfigure when one changes.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${KVSIM_PUBLIC_HEADERS}
             ${CMAKE_SOURCE_DIR}/cmake/kvsim.h.in)

# Writes `content` to `path` only when it differs (no rebuild otherwise).
function(kvsim_write_if_changed path content)
  if(EXISTS ${path})
    file(READ ${path} old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE ${path} "${content}")
endfunction()

set(KVSIM_GENERATED_INCLUDE ${CMAKE_BINARY_DIR}/generated/include)
set(KVSIM_UMBRELLA_H ${KVSIM_GENERATED_INCLUDE}/kvsim.h)
set(KVSIM_UMBRELLA_INCLUDES "")
set(KVSIM_CJSON_HEADERS "")
set(KVSIM_HEADER_CHECK_SOURCES "")
foreach(h ${KVSIM_PUBLIC_HEADERS})
  get_filename_component(name ${h} NAME)
  string(APPEND KVSIM_UMBRELLA_INCLUDES "#include \"kvsim/${name}\"\n")
  file(STRINGS ${h} uses_cjson REGEX "cJSON[ \t]*\\*")
  if(uses_cjson)
    list(APPEND KVSIM_CJSON_HEADERS "kvsim/${name}")
  endif()
  # Included twice: the second time checks the include guard.
  string(REGEX REPLACE "\\.h$" "" stem ${name})
  set(check ${CMAKE_BINARY_DIR}/generated/header_check/${stem}.c)
  kvsim_write_if_changed(${check}
       "#include \"kvsim/${name}\"\n#include \"kvsim/${name}\"\nint kvsim__check_${stem}(void);\nint kvsim__check_${stem}(void) { return 0; }\n")
  list(APPEND KVSIM_HEADER_CHECK_SOURCES ${check})
endforeach()
if(KVSIM_CJSON_HEADERS)
  string(REPLACE ";" ", " KVSIM_CJSON_HEADERS "${KVSIM_CJSON_HEADERS}")
else()
  set(KVSIM_CJSON_HEADERS "(none at present)")
endif()
configure_file(${CMAKE_SOURCE_DIR}/cmake/kvsim.h.in ${KVSIM_UMBRELLA_H} @ONLY)
set(check ${CMAKE_BINARY_DIR}/generated/header_check/umbrella.c)
kvsim_write_if_changed(${check}
     "#include <kvsim.h>\n#include <kvsim.h>\nint kvsim__check_umbrella(void);\nint kvsim__check_umbrella(void) { return KVSIM_OK; }\n")
list(APPEND KVSIM_HEADER_CHECK_SOURCES ${check})

# Built with the library: a header that does not stand alone fails the build.
add_library(kvsim_header_check OBJECT ${KVSIM_HEADER_CHECK_SOURCES})
target_include_directories(kvsim_header_check PRIVATE ${CMAKE_SOURCE_DIR}/sim/include
                           ${KVSIM_GENERATED_INCLUDE})
target_link_libraries(kvsim_header_check PRIVATE PkgConfig::CJSON)
target_compile_options(kvsim_header_check PRIVATE ${KVSIM_WARNINGS} -Wpedantic)
